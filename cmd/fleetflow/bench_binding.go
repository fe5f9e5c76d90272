package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/benchbinding"
)

func init() { registerBenchCommand(newBenchBindingCommand) }

func newBenchBindingCommand() *cobra.Command {
	cfg := benchbinding.DefaultConfig()
	var flags placerBenchFlags
	cmd := &cobra.Command{
		Use:   "binding [--workloads 200 --clusters 3 --nodes-per-cluster 8 --kinds job --modes " + strings.Join(benchbinding.ModeNames(), ",") + "] [-o table|json|yaml]",
		Short: "Check that kube-scheduler binds every pod of the gangs fleetflow places, per fit mode and scheduler profile",
		Long: "bench binding starts, for each mode, a local fleet whose workload clusters run kube-scheduler,\n" +
			"kube-controller-manager and kwok; seed pods take a random 0-7 GPUs of every 8-GPU node. The whole pipeline\n" +
			"runs in process. It submits --workloads random gangs (1-8 pods of 1-8 GPUs, of the --kinds in turn, from\n" +
			"--seed), waits for each verdict, then counts per placed gang whether kube-scheduler bound every pod within\n" +
			"--bind-timeout of the gang's first pod. Modes: nodes-least (fleetflow's node-level fit, kube-scheduler's\n" +
			"default LeastAllocated scoring), nodes-most (node-level fit, MostAllocated scoring), summed-least (a cluster\n" +
			"fits when its summed free resources cover the gang's, Karmada's general estimator's way; LeastAllocated),\n" +
			"nodes-pinned (node-level fit, LeastAllocated, the policy's pinPods: each pod pinned to its packed node).\n" +
			"It needs bin/kube-scheduler, kube-controller-manager and kwok (go tool task tools).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if cfg.Log, err = flags.start(); err != nil {
				return err
			}
			cfg.Progress = cmd.ErrOrStderr()
			res, err := benchbinding.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return flags.write(cmd.OutOrStdout(), res, func(out io.Writer) { writeBindingTable(out, res) })
		},
	}
	f := cmd.Flags()
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the fragmentation and of the gangs")
	f.IntVar(&cfg.Workloads, "workloads", cfg.Workloads, "gangs to submit per mode")
	f.IntVar(&cfg.SubmitWorkers, "submit-workers", cfg.SubmitWorkers, "gangs submitted at once (1: one after another; more: a burst the placer decides before pods exist)")
	f.IntVar(&cfg.MaxPods, "max-pods", cfg.MaxPods, "most pods of a gang (drawn from 1)")
	f.IntVar(&cfg.MaxGPUs, "max-gpus", cfg.MaxGPUs, "most GPUs of a pod (drawn from 1)")
	f.IntVar(&cfg.Clusters, "clusters", cfg.Clusters, "workload clusters")
	f.IntVar(&cfg.NodesPerCluster, "nodes-per-cluster", cfg.NodesPerCluster, "8-GPU nodes per cluster")
	f.StringSliceVar(&cfg.Kinds, "kinds", cfg.Kinds, "kinds of the gangs, taken in turn: "+strings.Join(benchbinding.KindNames(), ", ")+
		" (each needs its operator in the local fleet)")
	f.StringSliceVar(&cfg.Modes, "modes", cfg.Modes, "modes to measure, in order: "+strings.Join(benchbinding.ModeNames(), ", "))
	f.DurationVar(&cfg.BindTimeout, "bind-timeout", cfg.BindTimeout, "a placed gang whose pods are not all bound this long after its first pod was created counts as not bound")
	f.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "give up on a mode after this long, fleet start included")
	f.StringVar(&cfg.BinDir, "bin-dir", cfg.BinDir, "directory of etcd, kube-apiserver, kube-scheduler, kube-controller-manager and kwok")
	f.StringVar(&cfg.Dir, "dir", "", "directory of the fleets, one folder per mode, kept afterwards (default: a temporary directory, removed)")
	flags.register(f)
	return cmd
}

// writeBindingTable writes res as -o table shows it.
func writeBindingTable(out io.Writer, res *benchbinding.Result) {
	fmt.Fprintf(out, "fleet:     %d clusters x %d nodes x %d GPUs, %d GPUs free after the seed pods (seed %d)\n",
		res.Clusters, res.NodesPerCluster, benchbinding.GPUsPerNode, res.FreeGPUs, res.Seed)
	fmt.Fprintf(out, "gangs:     %d of %s, 1-%d pods x 1-%d GPUs, %d submitted at once; bound means every pod bound within %s\n\n",
		res.Workloads, strings.Join(res.Kinds, ","), res.MaxPods, res.MaxGPUs, res.SubmitWorkers, res.BindTimeout)
	fmt.Fprintf(out, "%-13s %-7s %-23s %7s %7s %13s %12s %12s %12s %13s %13s %10s %9s\n", "mode", "fit", "kube-scheduler",
		"placed", "unsched", "fully bound", "placed pods", "pinned pods", "pods pending", "pending GPUs", "pending GPU-h", "idle GPUs", "window s")
	for _, m := range res.Modes {
		scoring := m.Mode.Scoring
		if scoring == "" {
			scoring = "LeastAllocated"
		}
		if m.Mode.Pin {
			scoring += ", pinned"
		}
		fmt.Fprintf(out, "%-13s %-7s %-23s %7d %7d %6d (%3.0f%%) %12d %12d %12d %13d %13.3f %10d %9.0f\n", m.Mode.Name, m.Mode.Fit, scoring,
			m.Placed, m.Unschedulable, m.FullyBound, 100*m.FullyBoundShare, m.PlacedPods, m.PodsPinned, m.PodsPending, m.PendingGPUs,
			m.PendingGPUHours, m.IdleGPUs, m.WindowSeconds)
	}
}
