package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/chaos"
	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

func init() { registerCommand(newChaosCommand) }

type chaosOptions struct {
	dir, fleetFile, crds, policies, binDir string
	run                                    chaos.Options
	// binary and env start the parts: this executable; a test runs its own binary as fleetflow.
	binary string
	env    []string
}

func newChaosCommand() *cobra.Command {
	o := chaosOptions{run: chaos.Options{
		Duration: 5 * time.Minute, Converge: 2 * time.Minute,
		Load:   chaos.LoadOptions{Workloads: 200, DeleteShare: 0.2, GPUShare: 0.15},
		Faults: chaos.FaultOptions{Gap: 6 * time.Second, MaxDown: 8 * time.Second},
	}}
	cmd := &cobra.Command{
		Use:   "chaos [--seed N] [--duration D] [--workloads N]",
		Short: "Run a local fleet under random kill -9 of its parts, NATS nodes and apiservers, then check it",
		Long: `Start a local fleet (control plane and workload clusters of the fleet file), a 3-node NATS JetStream
cluster with streams at 3 replicas, and every fleetflow part as its own process: the control-plane producer,
two placers (one leads, one stands by), the status writer, and a producer and an applier per workload cluster.
For --duration, submit --workloads PyTorchJobs (small CPU jobs and GPU gangs) to the control plane, delete
some, and kill with SIGKILL a random part, NATS node or apiserver at random moments, bringing each back after
a random delay. Then check, from the clusters and the streams, until every promise holds:

  - every live workload Placed with exactly one copy, on its cluster, or Unschedulable with reasons;
  - every deleted workload gone from the control plane, its copies from every cluster;
  - no cluster over-committed: its copies' pods pack onto its nodes' free capacity;
  - no decision applied twice, and every copy carrying the newest decision for its cluster.

Print a report (kills per kind, convergence time after the last fault, violations) and exit non-zero on any
violation. --seed makes the choices repeatable; the components' logs are in --dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			self, err := os.Executable()
			if err != nil {
				return err
			}
			o.binary = self
			return runChaos(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", ".fleet/chaos", "directory for the fleet, the NATS nodes and every part's log (emptied first)")
	f.StringVar(&o.fleetFile, "fleet", "deploy/fleets/demo.yaml", "fleet description: clusters and nodes")
	f.StringVar(&o.crds, "crds", "deploy/demo/crds.yaml", "framework CRDs to install on every cluster (PyTorchJob among them)")
	f.StringVar(&o.policies, "policies", "deploy/demo/policies.yaml", "SchedulePolicies to apply to the control plane")
	f.StringVar(&o.binDir, "bin-dir", "bin", "directory holding the etcd and kube-apiserver binaries")
	f.Uint64Var(&o.run.Seed, "seed", 0, "seed of every random choice; 0 draws one (printed)")
	f.DurationVar(&o.run.Duration, "duration", o.run.Duration, "how long workloads are submitted and faults injected")
	f.DurationVar(&o.run.Converge, "converge", o.run.Converge, "how long after the last fault every check may take to pass")
	f.IntVar(&o.run.Load.Workloads, "workloads", o.run.Load.Workloads, "workloads to submit over the run")
	f.Float64Var(&o.run.Load.DeleteShare, "delete-share", o.run.Load.DeleteShare, "chance that a submission is followed by deleting a random live workload")
	f.Float64Var(&o.run.Load.GPUShare, "gpu-share", o.run.Load.GPUShare, "share of workloads that are GPU gangs (1-4 pods of 4 or 8 GPUs); the rest are one small CPU pod")
	f.DurationVar(&o.run.Faults.Gap, "kill-gap", o.run.Faults.Gap, "longest wait between a target coming back and the next kill (the shortest is a quarter)")
	f.DurationVar(&o.run.Faults.MaxDown, "max-down", o.run.Faults.MaxDown, "longest time a killed target stays down (the shortest is a tenth)")
	return cmd
}

func (o chaosOptions) validate() error {
	if err := positiveDurations(map[string]time.Duration{"--duration": o.run.Duration, "--converge": o.run.Converge,
		"--kill-gap": o.run.Faults.Gap, "--max-down": o.run.Faults.MaxDown}); err != nil {
		return err
	}
	if o.run.Load.Workloads < 1 {
		return fmt.Errorf("--workloads %d: must be at least 1", o.run.Load.Workloads)
	}
	for flag, share := range map[string]float64{"--delete-share": o.run.Load.DeleteShare, "--gpu-share": o.run.Load.GPUShare} {
		if share < 0 || share > 1 {
			return fmt.Errorf("%s %g: must be between 0 and 1", flag, share)
		}
	}
	return nil
}

func runChaos(ctx context.Context, o chaosOptions, out, errOut io.Writer) (err error) {
	step := func(format string, args ...any) { fmt.Fprintf(errOut, "chaos: "+format+"\n", args...) }
	if err := o.validate(); err != nil {
		return err
	}
	if o.run.Seed == 0 {
		o.run.Seed = uint64(time.Now().UnixNano())
	}
	in, err := readFleetInputs(o.fleetFile, o.crds, o.policies)
	if err != nil {
		return err
	}
	spec := in.spec
	for _, sub := range []string{"fleet", "nats", "parts"} {
		if err := os.RemoveAll(filepath.Join(o.dir, sub)); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(o.dir, "parts"), 0o755); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(o.dir, "chaos.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	log := slog.New(slog.NewTextHandler(logFile, nil))
	step("seed %d; logs in %s", o.run.Seed, o.dir)

	names := make([]string, 0, len(spec.Clusters))
	for _, c := range spec.Clusters {
		names = append(names, c.Name)
	}
	fleet, err := localfleet.Start(ctx, localfleet.Options{Dir: filepath.Join(o.dir, "fleet"), Clusters: names,
		BinDir: o.binDir, Logger: log})
	if err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, fleet.Stop(stopCtx))
	}()
	controlPlane, clusters, err := prepareFleet(ctx, fleet, in, "fleetflow-chaos")
	if err != nil {
		return err
	}
	if _, err := controlPlane.Dynamic.Resource(chaos.PyTorchJobs).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		return fmt.Errorf("--crds %s: a chaos run submits PyTorchJobs (%s), which the control plane does not serve: %w",
			o.crds, chaos.PyTorchJobs.GroupVersion(), err)
	}
	dynamicClients := map[string]dynamic.Interface{}
	for name, c := range clusters {
		dynamicClients[name] = c.Dynamic
	}
	step("fleet of %d workload clusters ready", len(names))

	nats, err := natscluster.Start(ctx, filepath.Join(o.dir, "nats"), 3)
	if err != nil {
		return err
	}
	defer nats.Stop()
	streamOpts := streams.DefaultOptions()
	streamOpts.Replicas = 3
	b, err := app.OpenBus(ctx, app.BusOptions{URL: nats.ClientURLs(), Streams: streamOpts}, "fleetflow-chaos", log)
	if err != nil {
		return err
	}
	defer b.Close()
	step("NATS cluster of 3 nodes ready at %s", nats.ClientURLs())

	parts, err := startParts(o, fleet, nats.ClientURLs())
	defer func() {
		for _, p := range parts {
			err = errors.Join(err, p.Stop(10*time.Second))
		}
	}()
	if err != nil {
		return err
	}
	expected := map[string]int{}
	for _, c := range spec.Clusters {
		expected[c.Name] = len(c.AllNodes())
	}
	observeCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := app.WaitObserved(observeCtx, b, expected); err != nil {
		return fmt.Errorf("waiting for every cluster in the streams: %w", err)
	}
	step("%d parts running; submitting %d workloads and injecting faults for %s", len(parts), o.run.Load.Workloads, o.run.Duration)

	targets := chaosTargets(ctx, parts, fleet, nats)
	checked := chaos.Fleet{ControlPlane: controlPlane.Dynamic, Clusters: dynamicClients, JetStream: b.JetStream, Nodes: schedulableNodes(spec)}
	o.run.Load.Namespaces = namespacesOf(spec)
	report, err := chaos.Run(ctx, o.run, checked, targets, parts, log)
	if err != nil {
		return err
	}
	if err := report.Write(out); err != nil {
		return err
	}
	if report.Failed() {
		return fmt.Errorf("chaos run with seed %d: %d violations", o.run.Seed, len(report.Violations))
	}
	return nil
}

// startParts starts every part of the pipeline as its own process on the NATS cluster at url.
func startParts(o chaosOptions, fleet *localfleet.Fleet, url string) ([]*chaos.Process, error) {
	type part struct {
		name, kind string
		args       []string
	}
	cp := fleet.ControlPlane.KubeconfigPath
	// No operator or scheduler runs in the local fleet, so no pod ever shows a copy's use of a node: its
	// reservation is the only record of it, and must outlast the run.
	placer := []string{"placer", "--lease-ttl", "5s", "--reservation-ttl", "24h"}
	all := []part{
		{"producer-control-plane", "producer", []string{"producer", "--kubeconfig", cp}},
		{"placer-0", "placer", placer},
		{"placer-1", "placer", placer},
		{"status", "status", []string{"status", "--kubeconfig", cp}},
	}
	for _, c := range fleet.Workloads {
		cluster := c.Name + "=" + c.KubeconfigPath
		all = append(all,
			part{"producer-" + c.Name, "producer", []string{"producer", "--cluster", cluster}},
			part{"applier-" + c.Name, "applier", []string{"applier", "--cluster", cluster}})
	}
	var started []*chaos.Process
	for _, p := range all {
		dir := filepath.Join(o.dir, "parts", p.name)
		args := append(slices.Clone(p.args), "--nats-url", url, "--stream-replicas", "3", "--data-dir", dir)
		proc, err := chaos.StartProcess(chaos.ProcessSpec{Name: p.name, Kind: p.kind, Binary: o.binary, Args: args,
			Env: o.env, LogPath: filepath.Join(o.dir, "parts", p.name+".log")})
		if err != nil {
			return started, err
		}
		started = append(started, proc)
	}
	return started, nil
}

// chaosTargets are what a run kills: every part, every NATS node, every apiserver.
func chaosTargets(ctx context.Context, parts []*chaos.Process, fleet *localfleet.Fleet, nats *natscluster.Cluster) []chaos.Target {
	var targets []chaos.Target
	for _, p := range parts {
		targets = append(targets, p.Target())
	}
	for i := range nats.Size() {
		targets = append(targets, chaos.Target{Name: nats.NodeName(i), Kind: "nats", Kill: func() error { return nats.Kill(i) },
			Restart: func() error { return nats.Restart(context.WithoutCancel(ctx), i) }})
	}
	for _, c := range fleet.Clusters() {
		targets = append(targets, chaos.Target{Name: "apiserver " + c.Name, Kind: "apiserver",
			Kill:    func() error { return fleet.KillCluster(c.Name) },
			Restart: func() error { return fleet.StartCluster(context.WithoutCancel(ctx), c.Name) }})
	}
	return targets
}

// schedulableNodes are each cluster's nodes that take pods, with their room: allocatable less requested.
func schedulableNodes(spec *fleetspec.Fleet) map[string][]chaos.Node {
	out := map[string][]chaos.Node{}
	for _, c := range spec.Clusters {
		for _, n := range c.AllNodes() {
			if n.Unschedulable {
				continue
			}
			free := n.Allocatable.DeepCopy()
			for r, q := range n.Requested {
				left := free[r]
				left.Sub(q)
				free[r] = left
			}
			out[c.Name] = append(out[c.Name], chaos.Node{Name: n.Name, Free: free, Taints: n.Taints})
		}
	}
	return out
}

// namespacesOf are the fleet file's namespaces, or "default" when it has none.
func namespacesOf(spec *fleetspec.Fleet) []string {
	var out []string
	for name := range spec.Namespaces {
		out = append(out, name)
	}
	if len(out) == 0 {
		return []string{corev1.NamespaceDefault}
	}
	slices.Sort(out)
	return out
}
