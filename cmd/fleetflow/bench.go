package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

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
	var output string
	cmd := &cobra.Command{
		Use:   "placement [--clusters 100 --nodes-per-cluster 1000 --workloads 20000] [-o json]",
		Short: "Place a stream of synthetic workloads on a synthetic fleet through the placement core alone",
		Long: "bench placement builds a synthetic fleet of mixed GPU and CPU nodes in the fleet view and places a\n" +
			"stream of workloads of the built-in kinds through the scheduler (no NATS), then reports decisions per\n" +
			"second and the fleet view's memory per node.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "json" && output != "table" {
				return fmt.Errorf("--output %q: want json or table", output)
			}
			res, err := placementbench.Run(cfg)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
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
	cmd.Flags().IntVar(&cfg.Clusters, "clusters", cfg.Clusters, "number of clusters")
	cmd.Flags().IntVar(&cfg.NodesPerCluster, "nodes-per-cluster", cfg.NodesPerCluster, "nodes in each cluster")
	cmd.Flags().IntVar(&cfg.Workloads, "workloads", cfg.Workloads, "workloads to place")
	cmd.Flags().IntVar(&cfg.GPUNodePercent, "gpu-node-percent", cfg.GPUNodePercent, "share of each cluster's nodes with GPUs")
	cmd.Flags().Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload mix")
	cmd.Flags().BoolVar(&cfg.PipelineMix, "pipeline-mix", false, "place bench pipeline's policy and workload mix instead of the mixed policies")
	cmd.Flags().StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the placement phase to this file (go tool pprof)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	return cmd
}
