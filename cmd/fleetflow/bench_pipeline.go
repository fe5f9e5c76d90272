package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/benchpipeline"
)

func init() { registerBenchCommand(newBenchPipelineCommand) }

func newBenchPipelineCommand() *cobra.Command {
	cfg := benchpipeline.DefaultConfig()
	var flags placerBenchFlags
	var cpuProfile, memProfile string
	cmd := &cobra.Command{
		Use:   "pipeline [--clusters 100 --nodes-per-cluster 1000 --workloads 10000 --rate 0] [-o table|json|yaml]",
		Short: "Push synthetic fleet and workload events through embedded JetStream into the real placer",
		Long: "bench pipeline starts an embedded JetStream and the placer, publishes a synthetic fleet (Clusters,\n" +
			"installed APIs, heartbeats, node states, one SchedulePolicy) and then workload CRs of the built-in kinds\n" +
			"as CloudEvents, exactly as the producers do, and measures the verdicts and decisions the placer persists:\n" +
			"decisions per second, and latency from a workload event's publish to its first verdict stored. The\n" +
			"reference is plain JetStream async publish of messages of the same size on the same server.\n" +
			"--rate offers a fixed load in workload events per second (0: as fast as possible). The placer logs at\n" +
			"warn level during the run.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if cfg.Timeout < 0 {
				return fmt.Errorf("--timeout %s: must be 0 (no limit) or more", cfg.Timeout)
			}
			if cfg.Log, err = flags.start(); err != nil {
				return err
			}
			memProfileBefore := ""
			if memProfile != "" {
				memProfileBefore = memProfile + ".before"
			}
			for _, prof := range []struct {
				flag, path string
				into       *io.Writer
			}{{"--cpuprofile", cpuProfile, &cfg.CPUProfile}, {"--memprofile", memProfile, &cfg.HeapProfile},
				{"--memprofile", memProfileBefore, &cfg.HeapProfileBefore}} {
				if prof.path == "" {
					continue
				}
				f, err := os.Create(prof.path)
				if err != nil {
					return fmt.Errorf("%s: %w", prof.flag, err)
				}
				defer func() {
					if closeErr := f.Close(); closeErr != nil && err == nil {
						err = fmt.Errorf("%s: %w", prof.flag, closeErr)
					}
				}()
				*prof.into = f
			}
			res, err := benchpipeline.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return flags.write(cmd.OutOrStdout(), res, func(out io.Writer) { writePipelineTable(out, res) })
		},
	}
	registerFleetSizeFlags(cmd.Flags(), &cfg.FleetSize, "workload events to publish")
	cmd.Flags().IntVar(&cfg.Rate, "rate", cfg.Rate, "offered workload events per second (0: as fast as possible)")
	cmd.Flags().Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload mix")
	cmd.Flags().IntVar(&cfg.RawMessages, "raw-messages", cfg.RawMessages, "messages of the raw publish reference (0: max(workloads, 100000))")
	cmd.Flags().StringVar(&cfg.DataDir, "data-dir", "", "JetStream storage directory (default: a temporary directory, removed afterwards)")
	cmd.Flags().DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "give up after this long (0: no limit)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the workload phase to this file (go tool pprof)")
	cmd.Flags().StringVar(&memProfile, "memprofile", "", "write a heap profile taken right after the workload phase to this file, and one taken right before it to FILE.before "+
		"(go tool pprof -sample_index=alloc_space -diff_base FILE.before FILE: what the phase allocated)")
	cmd.Flags().StringVar(&cfg.BusFloor, "bus-floor", "", "replace the placer by a relay that places nothing, to measure what the streams alone allow: "+
		benchpipeline.FloorVerdictAndDecision+" publishes a verdict and a decision per workload as the placer does for a placed one, "+
		benchpipeline.FloorDecision+" the decision alone")
	cmd.Flags().IntVar(&cfg.FloodNodeEvents, "flood-node-events", 0, "node reports per second that one more cluster, selected by no policy, "+
		"publishes while the workloads of a second phase are: the run has three phases of --workloads each (before, flood, after), "+
		"and the profiles are of the flood; needs --rate")
	cmd.Flags().Float64Var(&cfg.NodeReportRate, "node-report-rate", 0, "node reports a second the placer takes of each cluster "+
		"(0: the placer's default, negative: no bound)")
	cmd.Flags().Float64Var(&cfg.NodeReportBurst, "node-report-burst", 0, "node reports the placer takes of a cluster at once (0: the placer's default)")
	flags.register(cmd.Flags())
	return cmd
}

// writePipelineTable writes res as -o table shows it.
func writePipelineTable(out io.Writer, res *benchpipeline.Result) {
	rate := "as fast as possible"
	if res.Rate > 0 {
		rate = fmt.Sprintf("%d/s offered", res.Rate)
	}
	if res.BusFloor != "" {
		fmt.Fprintf(out, "bus floor:        a relay took the placer's place and published per workload: %s\n", res.BusFloor)
	}
	fmt.Fprintf(out, "fleet:            %d clusters, %d nodes (%d events, loaded in %.1f s)\n",
		res.Clusters, res.Nodes, res.FleetEvents, res.FleetLoadSeconds)
	fmt.Fprintf(out, "workloads:        %d, %s, published at %.0f/s (%d B per event)\n",
		res.Workloads, rate, res.OfferedPerSecond, res.EventBytes)
	fmt.Fprintf(out, "verdicts:         placed %d, unschedulable %d, other %d (%d B per verdict); %d decisions\n",
		res.Placed, res.Unschedulable, res.Other, res.VerdictBytes, res.Decisions)
	fmt.Fprintf(out, "decisions/s:      %.0f (%.2f s wall, %.2f s CPU)\n", res.DecisionsPerSecond, res.WorkloadSeconds, res.CPUSeconds)
	answer := "first verdict"
	if res.BusFloor == benchpipeline.FloorDecision {
		answer = "first decision"
	}
	fmt.Fprintf(out, "latency:          p50 %.2f ms, p99 %.2f ms, max %.2f ms (publish to %s stored)\n",
		res.P50Ms, res.P99Ms, res.MaxMs, answer)
	fmt.Fprintf(out, "decision latency: p50 %.2f ms, p99 %.2f ms (publish to first decision stored)\n",
		res.DecisionP50Ms, res.DecisionP99Ms)
	fmt.Fprintf(out, "raw publish/s:    %.0f (%d messages in %.2f s; over tcp %.0f/s, in process %.0f/s)\n",
		res.RawPublishPerSecond, res.RawMessages, res.RawSeconds, res.RawPublishTCPPerSecond, res.RawPublishInProcessPerSecond)
	fmt.Fprintf(out, "ratio:            %.3f decisions per raw publish (target >= 0.1)\n", res.Ratio)
	if len(res.Phases) == 0 {
		return
	}
	fmt.Fprintf(out, "\nphases of %d workloads at %d/s; one more cluster (%d nodes, selected by no policy) floods %d node reports/s in the second:\n",
		res.Workloads, res.Rate, res.Nodes/max(res.Clusters, 1), res.FloodNodeEvents)
	fmt.Fprintf(out, "%-7s %14s %12s %10s %10s %10s %12s %12s %6s %7s\n",
		"phase", "node events/s", "decisions/s", "p50 ms", "p99 ms", "max ms", "stored B/s", "placed/unsch", "dead", "CPU s")
	for _, p := range res.Phases {
		fmt.Fprintf(out, "%-7s %14.0f %12.0f %10.2f %10.2f %10.2f %12.0f %12s %6d %7.2f\n",
			p.Name, p.NodeEventsPerSecond, p.DecisionsPerSecond, p.P50Ms, p.P99Ms, p.MaxMs, p.StoredBytesPerSecond,
			fmt.Sprintf("%d/%d", p.Placed, p.Unschedulable), p.DeadLetters, p.CPUSeconds)
	}
}
