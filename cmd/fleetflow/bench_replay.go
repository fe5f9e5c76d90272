package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/replaybench"
)

func init() { registerBenchCommand(newBenchReplayCommand) }

func newBenchReplayCommand() *cobra.Command {
	cfg := replaybench.DefaultConfig()
	var flags placerBenchFlags
	cmd := &cobra.Command{
		Use:   "replay [--workloads 100000 --clusters 100 --nodes-per-cluster 1000] [-o table|json|yaml]",
		Short: "Replay a synthetic recorded history through the placement lifecycle in process and report events per second",
		Long: "bench replay records a synthetic history as the pipeline would store it (the pipeline benchmark's fleet,\n" +
			"a policy, ticks and heartbeats, PyTorchJob gangs submitted and, past --lifetime, deleted, each decision\n" +
			"confirmed by its applier and its pods reported running), every input decided by a live placer whose\n" +
			"verdicts and decisions are recorded. Then it replays that history (fleetflow replay's engine, no NATS)\n" +
			"and times the replay alone: input events fed per second, CPU, and the recorded outputs it compared.\n" +
			"It fails when the replay does not reproduce every recorded output.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := flags.start(); err != nil {
				return err
			}
			res, err := replaybench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if err := flags.write(cmd.OutOrStdout(), res, func(out io.Writer) { writeReplayTable(out, res) }); err != nil {
				return err
			}
			if res.Divergences > 0 {
				return fmt.Errorf("the replay diverged from the recorded history %d times (of %d recorded outputs)", res.Divergences, res.Recorded)
			}
			return nil
		},
	}
	registerFleetSizeFlags(cmd.Flags(), &cfg.FleetSize, "workloads submitted in the history")
	cmd.Flags().IntVar(&cfg.Lifetime, "lifetime", cfg.Lifetime, "later submissions a workload lives for before it is deleted (0: never)")
	cmd.Flags().Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the workload mix")
	cmd.Flags().StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the replay (not the synthesis) to this file (go tool pprof)")
	flags.register(cmd.Flags())
	return cmd
}

func writeReplayTable(out io.Writer, res *replaybench.Result) {
	count := func(m map[string]int) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(out, "fleet:        %d clusters, %d nodes; %d workloads (each deleted %d submissions later; 0: never)\n",
		res.Clusters, res.Nodes, res.Workloads, res.Lifetime)
	fmt.Fprintf(out, "history:      %d records, synthesized in %.1f s (a live placer deciding every input)\n", res.Records, res.SynthesisSeconds)
	fmt.Fprintf(out, "inputs:       %d: %s\n", res.Mix.InputTotal, count(res.Mix.Inputs))
	fmt.Fprintf(out, "outputs:      decisions %s; verdicts alone %d; other %d\n", count(res.Mix.Decisions), res.Mix.Verdicts, res.Mix.Other)
	fmt.Fprintf(out, "replayed:     %d events; %d of %d recorded outputs reproduced, %d divergences\n",
		res.Events, res.Reproduced, res.Recorded, res.Divergences)
	fmt.Fprintf(out, "live at end:  placed %d, unschedulable %d\n", res.Placed, res.Unschedulable)
	fmt.Fprintf(out, "events/s:     %.0f (%.2f s wall), %.0f per CPU second (%.2f s CPU)\n",
		res.EventsPerSecond, res.Seconds, res.EventsPerCPUSecond, res.CPUSeconds)
	fmt.Fprintf(out, "max RSS:      %.0f MB (the process, synthesis included)\n", float64(res.MaxRSSBytes)/1e6)
	for _, n := range res.Notes {
		fmt.Fprintf(out, "note:         %s\n", n)
	}
	for _, d := range res.First {
		fmt.Fprintf(out, "divergence:   %s %s cause %d: recorded %q, replayed %q, fields %s\n",
			d.Kind, d.Workload, d.Cause, d.Recorded, d.Replayed, strings.Join(d.Fields, ","))
	}
}
