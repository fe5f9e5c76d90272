package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/placementbench"
)

func init() { registerCommand(newBenchCommand) }

// benchChildFactories are bench subcommands that live in files of their own.
var benchChildFactories []func() *cobra.Command

// registerBenchCommand adds a subcommand to bench; call it from an init function.
func registerBenchCommand(factory func() *cobra.Command) {
	benchChildFactories = append(benchChildFactories, factory)
}

// newBenchCommand is the parent of the benchmark subcommands; each measures one part of fleetflow.
func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure fleetflow's throughput and memory",
	}
	cmd.AddCommand(newBenchPlacementCommand())
	for _, factory := range benchChildFactories {
		cmd.AddCommand(factory())
	}
	return cmd
}

func newBenchPlacementCommand() *cobra.Command {
	cfg := placementbench.DefaultConfig()
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "placement [--clusters 100 --nodes-per-cluster 1000 --workloads 20000] [-o json]",
		Short: "Place a stream of synthetic workloads on a synthetic fleet through the placement core alone",
		Long: "bench placement builds a synthetic fleet of mixed GPU and CPU nodes in the fleet view and places a\n" +
			"stream of workloads of the built-in kinds through the scheduler (no NATS), then reports decisions per\n" +
			"second and the fleet view's memory per node.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := placementbench.Run(cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output.structured() {
				return output.encode(out, res)
			}
			fmt.Fprintf(out, "fleet:          %d clusters, %d nodes\n", res.Clusters, res.Nodes)
			fmt.Fprintf(out, "workloads:      %d (placed %d, unschedulable %d, no policy %d)\n",
				res.Workloads, res.Placed, res.Unschedulable, res.NoPolicy)
			fmt.Fprintf(out, "decisions/s:    %.0f (%.2f s wall), %.0f per CPU second (%.2f s CPU)\n",
				res.DecisionsPerSecond, res.Seconds, res.DecisionsPerCPUSecond, res.CPUSeconds)
			fmt.Fprintf(out, "bytes per node: %.0f (fleet view), %.0f (after the run)\n", res.BytesPerNode, res.BytesPerNodeAfterRun)
			return nil
		},
	}
	registerFleetSizeFlags(cmd.Flags(), &cfg.FleetSize, "workloads to place")
	cmd.Flags().Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload mix")
	cmd.Flags().BoolVar(&cfg.PipelineMix, "pipeline-mix", false, "place bench pipeline's policy and workload mix instead of the mixed policies")
	cmd.Flags().StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the placement phase to this file (go tool pprof)")
	registerOutput(cmd.Flags(), &output)
	return cmd
}

// registerFleetSizeFlags binds the flags placementbench.FleetSize.Validate names to size, each defaulting to
// what size holds; workloads says what --workloads counts.
func registerFleetSizeFlags(flags *pflag.FlagSet, size *placementbench.FleetSize, workloads string) {
	flags.IntVar(&size.Clusters, "clusters", size.Clusters, "number of clusters")
	flags.IntVar(&size.NodesPerCluster, "nodes-per-cluster", size.NodesPerCluster, "nodes in each cluster")
	flags.IntVar(&size.Workloads, "workloads", size.Workloads, workloads)
	flags.IntVar(&size.GPUNodePercent, "gpu-node-percent", size.GPUNodePercent, "share of each cluster's nodes with GPUs")
}

// placerBenchFlags are the flags of the bench commands that run a placer in this process: the output format
// (-o table|json|yaml) and the process's GC target (--gc-percent), set as `fleetflow placer` sets its own.
type placerBenchFlags struct {
	output    outputFormat
	gcPercent int
}

func (f *placerBenchFlags) register(flags *pflag.FlagSet) {
	flags.IntVar(&f.gcPercent, "gc-percent", app.PlacerGCPercent, "GOGC of the process, as for fleetflow placer ($GOGC wins when set, 0 keeps Go's default)")
	registerOutput(flags, &f.output)
}

// start refuses a negative GC target, then tunes the collector for the placer
// that runs in this process. It returns the log of the run: warnings and errors, on stderr.
func (f *placerBenchFlags) start() (*slog.Logger, error) {
	if err := validGCPercent(f.gcPercent); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	app.TuneGCForPlacer(f.gcPercent, log)
	return log, nil
}

// write writes res to out as JSON or YAML, or has table write it when the output is a table.
func (f *placerBenchFlags) write(out io.Writer, res any, table func(io.Writer)) error {
	if f.output.structured() {
		return f.output.encode(out, res)
	}
	table(out)
	return nil
}
