package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
)

// commandFactories is filled by init functions of the subcommand files.
var commandFactories []func() *cobra.Command

func registerCommand(factory func() *cobra.Command) {
	commandFactories = append(commandFactories, factory)
}

func newRootCommand() *cobra.Command {
	var logLevel string
	root := &cobra.Command{
		Use:           "fleetflow",
		Short:         "Multi-cluster scheduler for Kubernetes AI/ML workload frameworks",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: %w", logLevel, err)
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
			return nil
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	for _, factory := range commandFactories {
		root.AddCommand(factory())
	}
	return root
}

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetflow:", err)
		os.Exit(1)
	}
}
