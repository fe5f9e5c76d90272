package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

func init() { registerCommand(newDemoCommand) }

type demoOptions struct {
	dir, fleetFile, crds, policies, workloads, binDir, natsListen string
	timeout                                                       time.Duration
	// operators run in every workload cluster (localfleet's catalog); with any, the clusters run pods.
	operators []string
	// verbose keeps the components' logs on the terminal instead of in the demo's log file.
	verbose bool
}

func newDemoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Start a local fleet with embedded NATS, place a few CRs, and keep it running until Ctrl-C",
		Long: `Start a real local fleet (one etcd, a control-plane apiserver and one apiserver per workload cluster of
the fleet file, with seeded nodes), an embedded NATS JetStream, and the whole fleetflow pipeline in this
process. Install the demo's framework CRDs, submit its CRs to the control plane, and print where each landed.
With --operators (default: the training operator) the workload clusters run pods (kube-scheduler,
kube-controller-manager, kwok) and the operators, so the jobs really run: the demo prints each job's phase
and the nodes its pods are bound to.
The fleet keeps running, with kubeconfigs to explore it, until Ctrl-C tears everything down.

The terminal shows the demo's steps and its result; the components' logs go to fleetflow.log in --dir
(named when the demo starts), or to the terminal with -v.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			return runDemo(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", ".fleet/demo", "directory for the fleet's data, logs, kubeconfigs and NATS storage")
	cmd.Flags().StringVar(&o.fleetFile, "fleet", "deploy/fleets/demo.yaml", "fleet description: clusters and nodes")
	cmd.Flags().StringVar(&o.crds, "crds", "deploy/demo/crds.yaml", "framework CRDs to install on every cluster")
	cmd.Flags().StringVar(&o.policies, "policies", "deploy/demo/policies.yaml", "SchedulePolicies to apply to the control plane")
	cmd.Flags().StringVar(&o.workloads, "workloads", "deploy/demo/workloads.yaml", "CRs to submit to the control plane")
	cmd.Flags().StringVar(&o.binDir, "bin-dir", "bin", "directory holding the etcd and kube-apiserver binaries")
	cmd.Flags().StringVar(&o.natsListen, "nats-listen", "127.0.0.1:4222", "listen address of the embedded NATS server (port 0 picks one)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 3*time.Minute, "how long startup and placement may take")
	cmd.Flags().StringSliceVar(&o.operators, "operators", []string{"training-operator"}, "framework operators to run in every "+
		"workload cluster, which then runs pods; empty (--operators=) stores the CRs only: "+strings.Join(localfleet.OperatorNames(), ", "))
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show the components' logs on the terminal rather than in DIR/fleetflow.log")
	return cmd
}

func runDemo(ctx context.Context, o demoOptions, out, errOut io.Writer) (err error) {
	step := func(format string, args ...any) { fmt.Fprintf(errOut, "demo: "+format+"\n", args...) }
	if err := positiveDurations(map[string]time.Duration{"--timeout": o.timeout}); err != nil {
		return err
	}
	in, err := readFleetInputs(o.fleetFile, o.crds, o.policies)
	if err != nil {
		return err
	}
	spec := in.spec
	workloads, err := readObjectsFile(o.workloads)
	if err != nil {
		return fmt.Errorf("--workloads: %w", err)
	}
	if len(o.operators) > 0 {
		if err := localfleet.CheckOperatorBinaries(o.binDir, o.operators...); err != nil {
			return fmt.Errorf("--operators: %w", err)
		}
	}
	names := make([]string, 0, len(spec.Clusters))
	for _, c := range spec.Clusters {
		names = append(names, c.Name)
	}

	var held *demoLog // the components' logs, unless -v
	if !o.verbose {
		held = &demoLog{}
		defer func() { err = errors.Join(err, held.close(errOut)) }()
		defer logTo(errOut)
		logTo(held)
	}
	step("starting a fleet of %d workload clusters plus a control plane in %s", len(names), o.dir)
	startCtx, cancelStart := context.WithTimeout(ctx, o.timeout)
	defer cancelStart()
	fleet, err := localfleet.Start(startCtx, localfleet.Options{
		Dir: o.dir, Clusters: names, BinDir: o.binDir, Logger: slog.Default(), StartTimeout: o.timeout,
		RunPods:  len(o.operators) > 0,
		Progress: func(p localfleet.Progress) { fmt.Fprintf(errOut, "fleet: %s\n", p) },
	})
	if err != nil {
		return err
	}
	if held != nil {
		path := filepath.Join(o.dir, "fleetflow.log")
		if err := held.open(path); err != nil {
			return err
		}
		step("logs of every component go to %s (-v shows them here)", path)
	}
	defer func() {
		step("stopping the fleet")
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = errors.Join(err, fleet.Stop(stopCtx))
	}()
	// Level 1 (copying frameworks by a Duplicate policy) arrives with the pipeline issue; until then the
	// demo installs the framework CRDs on every cluster itself.
	step("seeding nodes (%s), installing %d framework CRD(s) on every cluster, registering %d workload clusters and %d SchedulePolicies",
		seededSummary(spec), len(in.crds), len(names), len(in.policies))
	controlPlane, clusters, err := prepareFleet(startCtx, fleet, in, "fleetflow-demo")
	if err != nil {
		return err
	}
	if len(o.operators) > 0 {
		step("starting %s in every workload cluster", strings.Join(o.operators, ", "))
		if err := fleet.StartOperatorsEverywhere(startCtx, o.operators...); err != nil {
			return err
		}
	}

	// A demo starts from empty streams; a previous run's history would replay its decisions.
	natsDir := filepath.Join(o.dir, "nats")
	if err := os.RemoveAll(natsDir); err != nil {
		return err
	}
	// Each part connects as its own NATS user, allowed only its subjects; the users stay with the fleet's
	// folder (a cluster added to the fleet file gets users of its own).
	usersDir := filepath.Join(o.dir, "nats-users")
	users, err := natsauth.LoadOrGenerate(usersDir, names)
	if err != nil {
		return err
	}
	step("each part connects to NATS as its own user; their seeds are in %s", usersDir)
	b, err := openDemoBus(ctx, natsDir, o.natsListen, users)
	if err != nil {
		return err
	}
	defer b.Close()
	kinds, err := kindsOf(workloads)
	if err != nil {
		return err
	}
	all := &app.AllInOne{ControlPlane: controlPlane, Kinds: kinds, SkippedNamespaces: app.DefaultSkipped()}
	pipelineCtx, stopPipeline := context.WithCancel(ctx)
	pipelineDone := make(chan error, 1)
	go func() { pipelineDone <- all.Run(pipelineCtx, b, slog.Default()) }()
	defer func() {
		stopPipeline()
		err = errors.Join(err, <-pipelineDone)
	}()

	expected := map[string]int{}
	for _, c := range spec.Clusters {
		expected[c.Name] = len(c.AllNodes())
	}
	if err := app.WaitObserved(startCtx, b, expected); err != nil {
		return err
	}
	step("every cluster's nodes, APIs and heartbeat are in the streams")
	step("submitting %d CR(s) to the control plane", len(workloads))
	if err := controlPlane.Apply(startCtx, "fleetflow-demo", workloads...); err != nil {
		return err
	}
	landed, err := waitPlaced(startCtx, controlPlane, clusters, workloads)
	if err != nil {
		return err
	}
	var runs []jobRun
	if len(o.operators) > 0 {
		step("waiting until the placed jobs run: their pods bound to nodes, their phase on the control plane")
		runCtx, cancel := context.WithTimeout(ctx, time.Minute)
		runs = waitRunning(runCtx, controlPlane, clusters, workloads, landed)
		cancel()
	}
	printDemo(out, fleet, b.URL, usersDir, workloads, landed, runs)
	select {
	case <-ctx.Done():
		fmt.Fprintln(out)
		return nil
	case err := <-pipelineDone:
		pipelineDone <- err
		return fmt.Errorf("pipeline stopped: %w", err)
	case <-fleet.Exited():
		return fmt.Errorf("fleet process exited: %w", fleet.ExitErr())
	}
}

// demoLog holds the demo's logs in memory until its folder holds the fleet (which refuses a folder it did not
// make unless it is empty), then writes them to a file there.
type demoLog struct {
	mu   sync.Mutex
	held bytes.Buffer
	file *os.File
}

func (l *demoLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		return l.file.Write(p)
	}
	return l.held.Write(p)
}

// open creates the log file at path, emptied (each run's logs start afresh), with what was held so far.
func (l *demoLog) open(path string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("demo log: %w", err)
	}
	if _, err := l.held.WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("demo log: %w", err)
	}
	l.file = f
	return nil
}

// close closes the file; with none (the fleet did not start), what was held goes to w, to say why.
func (l *demoLog) close(w io.Writer) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file == nil {
		_, err := l.held.WriteTo(w)
		return err
	}
	return l.file.Close()
}

func openDemoBus(ctx context.Context, dataDir, listen string, users *natsauth.Users) (*app.Bus, error) {
	opts := app.BusOptions{DataDir: dataDir, Listen: listen, Streams: streams.DefaultOptions(), Users: users}
	b, err := app.OpenBus(ctx, opts, "fleetflow-demo", slog.Default())
	if err != nil && listen != "127.0.0.1:0" {
		// The default port may be taken by another NATS; any port will do for the demo.
		opts.Listen = "127.0.0.1:0"
		b, err = app.OpenBus(ctx, opts, "fleetflow-demo", slog.Default())
	}
	return b, err
}

// placement is where the demo found a workload: its verdict on the control plane, and the cluster
// whose apiserver holds the copy.
type placement struct {
	verdict, cluster, reasons string
}

// waitPlaced polls each workload's verdict annotation on the control plane and, for placed ones, the
// workload cluster the verdict names, until every workload has a verdict and every placed one has landed.
func waitPlaced(ctx context.Context, controlPlane *kube.Clients, clusters map[string]*kube.Clients, workloads []*unstructured.Unstructured) (map[string]placement, error) {
	out := map[string]placement{}
	for _, w := range workloads {
		key := w.GetNamespace() + "/" + w.GetName()
		for {
			if p, ok := landed(ctx, controlPlane, clusters, w); ok {
				out[key] = p
				break
			}
			select {
			case <-ctx.Done():
				return out, fmt.Errorf("%s %s was not placed in time: %w", w.GetKind(), key, ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return out, nil
}

// getObject returns the cluster's object of w's kind, namespace and name, or nil when it has none (yet).
func getObject(ctx context.Context, c *kube.Clients, w *unstructured.Unstructured) *unstructured.Unstructured {
	gvr, _, err := c.ResourceFor(w)
	if err != nil {
		return nil
	}
	obj, err := c.Dynamic.Resource(gvr).Namespace(w.GetNamespace()).Get(ctx, w.GetName(), metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return obj
}

func landed(ctx context.Context, controlPlane *kube.Clients, clusters map[string]*kube.Clients, w *unstructured.Unstructured) (placement, bool) {
	source := getObject(ctx, controlPlane, w)
	if source == nil {
		return placement{}, false
	}
	a := source.GetAnnotations()
	p := placement{verdict: a[schemas.AnnotationPlacement], cluster: a[schemas.AnnotationCluster], reasons: a[schemas.AnnotationReasons]}
	switch p.verdict {
	case "":
		return p, false
	case string(schemas.VerdictPlaced):
		c := clusters[p.cluster]
		return p, c != nil && getObject(ctx, c, w) != nil
	default:
		return p, true
	}
}

func printDemo(out io.Writer, fleet *localfleet.Fleet, natsURL, usersDir string, workloads []*unstructured.Unstructured,
	landed map[string]placement, runs []jobRun) {
	fmt.Fprintln(out, "\nPlacements:")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tVERDICT\tCLUSTER\tWHY NOT ELSEWHERE")
	for _, w := range workloads {
		p := landed[w.GetNamespace()+"/"+w.GetName()]
		why := strings.ReplaceAll(p.reasons, "\n", "; ")
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", w.GetKind(), w.GetNamespace(), w.GetName(), p.verdict, p.cluster, why)
	}
	_ = tw.Flush()
	if len(runs) > 0 {
		printRuns(out, runs)
	}
	fmt.Fprintln(out, "\nClusters:")
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSERVER\tKUBECONFIG")
	for _, c := range fleet.Clusters() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, c.Server, c.KubeconfigPath)
	}
	_ = tw.Flush()
	example := fleet.Workloads[0]
	if len(workloads) > 0 {
		if name := landed[workloads[0].GetNamespace()+"/"+workloads[0].GetName()].cluster; name != "" {
			example, _ = fleet.Cluster(name)
		}
	}
	kind := "pytorchjobs"
	fmt.Fprintf(out, "\nTry:\n  kubectl --kubeconfig %s get %s -A\n", example.KubeconfigPath, kind)
	fmt.Fprintf(out, "  kubectl --kubeconfig %s get %s -A   # the control plane\n", fleet.ControlPlane.KubeconfigPath, kind)
	fmt.Fprintf(out, "  kubectl --kubeconfig %s get clusters,schedulepolicies\n", fleet.ControlPlane.KubeconfigPath)
	fmt.Fprintf(out, "  kubectl --kubeconfig %s get workloadplacements -A   # where each workload runs, and why not\n",
		fleet.ControlPlane.KubeconfigPath)
	fmt.Fprintf(out, "  kubectl --kubeconfig %s events -n %s --for %s/%s\n", fleet.ControlPlane.KubeconfigPath,
		workloads[0].GetNamespace(), strings.ToLower(workloads[0].GetKind()), workloads[0].GetName())
	fmt.Fprintf(out, "  nats --server %s --nkey %s stream ls\n", natsURL, natsauth.SeedFile(usersDir, string(natsauth.Admin)))
	fmt.Fprintf(out, "  fleetflow audit tail --nats-url %s --nats-nkey %s --workload PyTorchJob/%s/%s\n", natsURL,
		natsauth.SeedFile(usersDir, string(natsauth.Audit)), workloads[0].GetNamespace(), workloads[0].GetName())
	fmt.Fprintln(out, "\nThe fleet and the pipeline keep running. Press Ctrl-C to tear everything down.")
}

// jobRun is what a placed job's pods do on its cluster.
type jobRun struct {
	kind, namespace, name, cluster, phase string
	// nodes are the nodes its pods are bound to, one entry per pod ("-" while Pending).
	nodes []string
}

// waitRunning waits, within ctx, until every placed job's copy has pods on its cluster, all bound to nodes
// and with a phase on the control plane, and returns what it saw last for each (also when ctx ends first: the
// demo shows what is, not an error).
func waitRunning(ctx context.Context, controlPlane *kube.Clients, clusters map[string]*kube.Clients,
	workloads []*unstructured.Unstructured, landed map[string]placement) []jobRun {
	runs := make([]jobRun, 0, len(workloads))
	for _, w := range workloads {
		p := landed[w.GetNamespace()+"/"+w.GetName()]
		run := jobRun{kind: w.GetKind(), namespace: w.GetNamespace(), name: w.GetName(), cluster: p.cluster}
		c := clusters[p.cluster]
		for c != nil {
			run = observeRun(ctx, controlPlane, c, w, run)
			if (running(run.phase) && len(run.nodes) > 0 && !slices.Contains(run.nodes, "-")) || ctx.Err() != nil {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		runs = append(runs, run)
	}
	return runs
}

// running reports a phase of a job whose operator has started it (or already finished it).
func running(phase string) bool {
	return phase == string(karta.PhaseRunning) || phase == string(karta.PhaseCompleted) || phase == string(karta.PhaseFailed)
}

// observeRun reads the job's phase on the control plane and the nodes of the pods its copy owns.
func observeRun(ctx context.Context, controlPlane, cluster *kube.Clients, w *unstructured.Unstructured, run jobRun) jobRun {
	if source := getObject(ctx, controlPlane, w); source != nil {
		run.phase = source.GetAnnotations()[schemas.AnnotationPhase]
	}
	copied := getObject(ctx, cluster, w)
	if copied == nil {
		return run
	}
	pods, err := cluster.Core.CoreV1().Pods(w.GetNamespace()).List(ctx, metav1.ListOptions{})
	if err != nil {
		return run
	}
	run.nodes = run.nodes[:0]
	for _, pod := range pods.Items {
		if !slices.ContainsFunc(pod.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == copied.GetUID() }) {
			continue
		}
		node := pod.Spec.NodeName
		if node == "" {
			node = "-"
		}
		run.nodes = append(run.nodes, node)
	}
	slices.Sort(run.nodes)
	return run
}

func printRuns(out io.Writer, runs []jobRun) {
	fmt.Fprintln(out, "\nRuns (the operators create the pods, kube-scheduler binds them, kwok runs them):")
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tCLUSTER\tPHASE\tNODES")
	for _, r := range runs {
		phase, nodes := cmp.Or(r.phase, "-"), "-"
		if len(r.nodes) > 0 {
			nodes = strings.Join(r.nodes, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.kind, r.namespace, r.name, cmp.Or(r.cluster, "-"), phase, nodes)
	}
	_ = tw.Flush()
}

func readFleetFile(path string) (*fleetspec.Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return fleetspec.Parse(data, path)
}

func readObjectsFile(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return kube.DecodeYAML(data, path)
}

// fleetInputs are what a local fleet is made of: its clusters and nodes, the framework CRDs every cluster
// gets, and the SchedulePolicies of the control plane.
type fleetInputs struct {
	spec     *fleetspec.Fleet
	crds     []*unstructured.Unstructured
	policies []*unstructured.Unstructured
}

// readFleetInputs reads the --fleet, --crds and --policies files, naming the flag of one that fails.
func readFleetInputs(fleetFile, crds, policies string) (in fleetInputs, err error) {
	if in.spec, err = readFleetFile(fleetFile); err != nil {
		return in, fmt.Errorf("--fleet: %w", err)
	}
	if in.crds, err = readObjectsFile(crds); err != nil {
		return in, fmt.Errorf("--crds: %w", err)
	}
	if in.policies, err = readObjectsFile(policies); err != nil {
		return in, fmt.Errorf("--policies: %w", err)
	}
	return in, nil
}

// prepareFleet seeds the nodes, installs the CRDs on the control plane and every workload cluster, registers
// the clusters and applies the policies, and returns clients of the control plane and of each workload cluster.
func prepareFleet(ctx context.Context, fleet *localfleet.Fleet, in fleetInputs, fieldManager string) (
	*kube.Clients, map[string]*kube.Clients, error) {
	if err := localfleet.Seed(ctx, fleet, in.spec); err != nil {
		return nil, nil, err
	}
	controlPlane, err := kube.NewClients(fleet.ControlPlane.RESTConfig())
	if err != nil {
		return nil, nil, err
	}
	clusters := map[string]*kube.Clients{}
	for _, c := range fleet.Workloads {
		if clusters[c.Name], err = kube.NewClients(c.RESTConfig()); err != nil {
			return nil, nil, err
		}
	}
	for _, clients := range append([]*kube.Clients{controlPlane}, mapValues(clusters)...) {
		if err := clients.Apply(ctx, fieldManager, in.crds...); err != nil {
			return nil, nil, err
		}
	}
	if err := registerFleet(ctx, controlPlane, fleet, in.spec, fieldManager); err != nil {
		return nil, nil, err
	}
	if err := controlPlane.Apply(ctx, fieldManager, in.policies...); err != nil {
		return nil, nil, err
	}
	return controlPlane, clusters, nil
}

func kindsOf(objects []*unstructured.Unstructured) ([]schema.GroupVersionKind, error) {
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, o := range objects {
		gvk := o.GroupVersionKind()
		if !seen[gvk] {
			seen[gvk] = true
			kinds = append(kinds, gvk)
		}
	}
	if len(kinds) == 0 {
		return nil, errors.New("no workloads to submit")
	}
	return kinds, nil
}

func seededSummary(spec *fleetspec.Fleet) string {
	parts := make([]string, 0, len(spec.Clusters))
	for _, c := range spec.Clusters {
		parts = append(parts, fmt.Sprintf("%s=%d", c.Name, len(c.AllNodes())))
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

func mapValues[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
