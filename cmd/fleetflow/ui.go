package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/consumers/ui"
	"github.com/fleetflow/fleetflow/internal/bus"
)

func init() { registerCommand(newUICommand) }

func newUICommand() *cobra.Command {
	var natsURL, listen, tokenFile string
	var auth bus.ClientAuth
	var heartbeatTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "ui [--nats-url URL] [--listen ADDR] [--token-file FILE]",
		Short: "Serve the fleet view in the browser: capacity, workloads, the live decision stream, explain and what-if",
		Long: "ui serves a read-only web view of the fleet, fed only by the streams (no Kubernetes credentials): the\n" +
			"clusters with their capacity and GPU heat maps, the workloads with their verdicts, reasons, explanation\n" +
			"and audit trail, the live feed of decisions, and the what-if of a SchedulePolicy. It listens on\n" +
			ui.DefaultListen + " unless --listen says otherwise; with --token-file (or $" + ui.TokenEnv + ") every\n" +
			"request must carry that token, as a bearer token or through the page's sign-in form.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if err := positiveDurations(map[string]time.Duration{"--heartbeat-timeout": heartbeatTimeout}); err != nil {
				return err
			}
			token, err := ui.ReadToken(tokenFile)
			if err != nil {
				return fmt.Errorf("--token-file: %w", err)
			}
			log := slog.Default()
			nc, js, err := connectAs(natsURL, "fleetflow-ui", auth, bus.LogConnectionEvents(log)...)
			if err != nil {
				return err
			}
			defer nc.Close()
			return ui.Run(ctx, js, ui.RunOptions{Listen: listen, Token: token, HeartbeatTimeout: heartbeatTimeout}, log)
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS JetStream URL whose streams fleetflow uses")
	registerNATSAuth(cmd.Flags(), &auth)
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "address to serve the view on; anything but localhost wants a token")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token every request must carry (default: $"+ui.TokenEnv+", else none)")
	cmd.Flags().DurationVar(&heartbeatTimeout, "heartbeat-timeout", 30*time.Second, "a cluster silent this long is shown NotReady (the placer's --heartbeat-timeout)")
	return cmd
}
