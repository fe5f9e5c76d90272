package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/fleetflow/fleetflow/internal/natscluster"
)

// commandFactories is filled by init functions of the subcommand files.
var commandFactories []func() *cobra.Command

func registerCommand(factory func() *cobra.Command) {
	commandFactories = append(commandFactories, factory)
}

// logSettings are the --log-level and --log-format of the command running.
type logSettings struct {
	level slog.Level
	json  bool
}

var logs logSettings

// logTo makes w the destination of the process's logs, in the format and at the level the flags chose: slog's
// default logger, and klog's, through which client-go logs (an unreachable apiserver, a failed watch), so those
// lines come out as fleetflow's own, structured and filtered by --log-level.
func logTo(w io.Writer) {
	options := &slog.HandlerOptions{Level: logs.level}
	var handler slog.Handler = slog.NewTextHandler(w, options)
	if logs.json {
		handler = slog.NewJSONHandler(w, options)
	}
	logger := slog.New(handler)
	slog.SetDefault(logger)
	klog.SetSlogLogger(logger)
}

func newRootCommand() *cobra.Command {
	var logLevel, logFormat string
	root := &cobra.Command{
		Use:           "fleetflow",
		Short:         "Multi-cluster scheduler for Kubernetes AI/ML workload frameworks",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return usageError(fmt.Errorf("--log-level %q: %w", logLevel, err))
			}
			if logFormat != "text" && logFormat != "json" {
				return usageError(fmt.Errorf("--log-format %q: want text or json", logFormat))
			}
			logs = logSettings{level: level, json: logFormat == "json"}
			logTo(os.Stderr)
			return nil
		},
	}
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.PersistentFlags().StringVar(&logFormat, "log-format", "text", "log format: text (key=value) or json, one object per line")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	for _, factory := range commandFactories {
		root.AddCommand(factory())
	}
	refuseStrayArguments(root)
	return root
}

// refuseStrayArguments makes every command below root fail on an argument it does not take. Without it, a
// group (audit, bench, fleet) given a misspelt subcommand prints its help and exits 0, and a part (run,
// placer, ...) runs and ignores the argument.
func refuseStrayArguments(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		switch {
		case c.HasSubCommands() && !c.Runnable():
			c.Args = func(c *cobra.Command, args []string) error { // "unknown command "tial" for "fleetflow audit""
				return usageError(cobra.NoArgs(c, args))
			}
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		case c.Args == nil:
			c.Args = noArguments
		}
		refuseStrayArguments(c)
	}
}

func noArguments(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return usageError(fmt.Errorf("%s takes no arguments, got %q (flags start with --)", path, args))
	}
	return nil
}

// usage is an error in how a command was called (a flag, an argument), as opposed to one in what it did.
type usage struct{ error }

func (u usage) Unwrap() error { return u.error }

// usageError marks err as a usage error, which exits with status 2 as for other Unix commands; nil stays nil.
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return usage{err}
}

// exitCode is the exit status for err: 0 for none, 2 for a usage error, 1 for any other.
func exitCode(err error) int {
	var u usage
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u):
		return 2
	default:
		return 1
	}
}

func main() {
	// fleetflow chaos runs its NATS nodes as this executable re-run.
	natscluster.RunNodeIfAsked()
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "fleetflow:", err)
		os.Exit(exitCode(err))
	}
}
