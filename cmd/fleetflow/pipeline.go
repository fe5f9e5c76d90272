package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/consumers/ui"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/evalguard"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

func init() {
	registerCommand(newRunCommand)
	registerCommand(newProducerCommand)
	registerCommand(newPlacerCommand)
	registerCommand(newApplierCommand)
	registerCommand(newStatusCommand)
}

type busFlags struct {
	url      string
	dataDir  string
	listen   string
	history  string
	replicas int
	auth     bus.ClientAuth
	health   string
	// usersDir holds every part's NATS user seed (fleetflow nats users --dir): fleetflow run's parts each
	// connect as their own.
	usersDir string
}

func (f *busFlags) register(flags *pflag.FlagSet) {
	flags.StringVar(&f.url, "nats-url", "", "external NATS JetStream URL; empty embeds a server")
	flags.StringVar(&f.dataDir, "data-dir", ".fleet/nats", "local storage: the embedded NATS server's, and the record of user ResourceInterface evaluations in progress")
	flags.StringVar(&f.listen, "nats-listen", "127.0.0.1:4222", "listen address of the embedded NATS server (port 0 picks one)")
	flags.StringVar(&f.history, "history", "168h", "how long events and decisions are kept for audit and replay (at least the streams' 2m duplicate window)")
	flags.IntVar(&f.replicas, "stream-replicas", 1, "JetStream replication factor of fleetflow's streams (up to the external cluster's size)")
	flags.StringVar(&f.health, "health-address", "", "serve /healthz, /readyz and Prometheus /metrics on this address (e.g. :8080); empty serves none")
	registerNATSAuth(flags, &f.auth)
}

// registerNATSAuth adds the flags that authenticate to an external NATS server.
// connectAs connects to NATS at url as name, with the credentials and TLS the flags gave, for a command that
// reads the streams (audit, replay).
func connectAs(url, name string, auth bus.ClientAuth, options ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	authOpts, err := auth.Options()
	if err != nil {
		return nil, nil, err
	}
	return bus.Connect(url, name, append(authOpts, options...)...)
}

func registerNATSAuth(flags *pflag.FlagSet, auth *bus.ClientAuth) {
	flags.StringVar(&auth.CredsFile, "nats-creds", "", "NATS credentials file (user JWT and NKey seed) for --nats-url")
	flags.StringVar(&auth.NkeyFile, "nats-nkey", "", "NATS NKey user seed file (one of those fleetflow nats users --dir writes) for --nats-url")
	flags.StringVar(&auth.TLSCAFile, "nats-tls-ca", "", "PEM file of the CAs that sign the NATS server's certificate")
	flags.StringVar(&auth.TLSCertFile, "nats-tls-cert", "", "client certificate for NATS servers that verify clients by TLS")
	flags.StringVar(&auth.TLSKeyFile, "nats-tls-key", "", "key of --nats-tls-cert")
}

// streamOptions reads --history and --stream-replicas. Each part checks them before it starts anything.
func (f *busFlags) streamOptions() (streams.Options, error) {
	opts := streams.DefaultOptions()
	history, err := parseDuration("--history", f.history)
	if err != nil {
		return opts, err
	}
	if history < opts.DuplicateWindow {
		// JetStream refuses a stream whose messages age out before their duplicates stop being detected.
		return opts, fmt.Errorf("--history %q: must be at least the streams' duplicate window, %s", f.history, opts.DuplicateWindow)
	}
	opts.History = history
	if f.replicas < 1 || f.replicas > 5 {
		return opts, fmt.Errorf("--stream-replicas %d: JetStream replicates a stream on 1 to 5 servers", f.replicas)
	}
	opts.Replicas = f.replicas
	return opts, nil
}

// open serves the health endpoints and metrics (--health-address) for as long as ctx lasts, then connects to
// NATS: /healthz answers while the connection is made, and /readyz says why the process is not ready yet.
func (f *busFlags) open(ctx context.Context, name string) (*app.Bus, error) {
	if f.health != "" {
		addr, err := observe.Serve(ctx, f.health, slog.Default())
		if err != nil {
			return nil, fmt.Errorf("--health-address: %w", err)
		}
		slog.Info("serving health and metrics", "address", addr)
	}
	opts, err := f.streamOptions()
	if err != nil {
		return nil, err
	}
	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", f.dataDir, err)
	}
	busOpts := app.BusOptions{URL: f.url, DataDir: dataDir, Listen: f.listen, Streams: opts, Auth: f.auth}
	if f.usersDir != "" {
		if busOpts.Users, err = natsauth.LoadDir(f.usersDir); err != nil {
			return nil, fmt.Errorf("--nats-users: %w", err)
		}
	}
	b, err := app.OpenBus(ctx, busOpts, name, slog.Default())
	if err != nil {
		return nil, err
	}
	if guard := guardEvaluations(filepath.Join(dataDir, "ri-evaluations-"+name)); guard != nil {
		b.OnClose(func() {
			karta.SetEvaluationGuard(nil)
			_ = guard.Close()
		})
	}
	return b, nil
}

// guardEvaluations records the user ResourceInterface evaluations in progress at path, and refuses the RI
// versions a process stopped in the middle of evaluating (see karta.EvaluationGuard). Without a writable
// path it guards nothing, with a warning.
func guardEvaluations(path string) *evalguard.File {
	guard, refused, err := evalguard.Open(path)
	if err != nil {
		slog.Warn("user ResourceInterfaces are evaluated unguarded: one that stops the process (out of memory) would stop "+
			"it again at its restart; give a writable --data-dir", "error", err)
		return nil
	}
	for _, identity := range refused {
		slog.Error("refusing a ResourceInterface version: a process stopped while evaluating it (out of memory, or "+
			"a runaway expression); workloads of its kind are Invalid until the RI changes", "resource_interface", identity)
		karta.Refuse(identity, "a fleetflow process stopped while evaluating it (out of memory, or a runaway expression)")
	}
	karta.SetEvaluationGuard(guard)
	return guard
}

func parseKinds(values []string) ([]schema.GroupVersionKind, error) {
	kinds := make([]schema.GroupVersionKind, 0, len(values))
	for _, v := range values {
		parts := strings.Split(v, "/")
		var gvk schema.GroupVersionKind
		switch len(parts) {
		case 2:
			gvk = schema.GroupVersionKind{Version: parts[0], Kind: parts[1]}
		case 3:
			gvk = schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}
		default:
			return nil, fmt.Errorf("--watch %q: want group/version/Kind (or version/Kind for the core group)", v)
		}
		if gvk.Version == "" || gvk.Kind == "" {
			return nil, fmt.Errorf("--watch %q: version and kind are required", v)
		}
		kinds = append(kinds, gvk)
	}
	return kinds, nil
}

// clusterKubeconfig names a workload cluster and its kubeconfig.
type clusterKubeconfig struct {
	Name       string
	Kubeconfig kube.KubeconfigRef
}

// clusterClients reads one --cluster NAME=KUBECONFIG[@CONTEXT] flag and builds that cluster's clients.
func clusterClients(flag string) (string, *kube.Clients, error) {
	parsed, err := parseClusters([]string{flag})
	if err != nil {
		return "", nil, err
	}
	clients, err := kube.ClientsFor(parsed[0].Kubeconfig)
	if err != nil {
		return "", nil, fmt.Errorf("--cluster %s: %w", parsed[0].Name, err)
	}
	return parsed[0].Name, clients, nil
}

// parseClusters reads repeated NAME=KUBECONFIG[@CONTEXT] flags.
func parseClusters(values []string) ([]clusterKubeconfig, error) {
	seen := map[string]bool{}
	var out []clusterKubeconfig
	for _, v := range values {
		name, path, ok := strings.Cut(v, "=")
		if !ok || name == "" || path == "" {
			return nil, usageError(fmt.Errorf("--cluster %q: want NAME=KUBECONFIG or NAME=KUBECONFIG@CONTEXT", v))
		}

		// The name goes into subjects, consumer names and the Cluster object's name.
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			return nil, fmt.Errorf("--cluster %q: cluster name %q: %s", v, name, strings.Join(msgs, "; "))
		}
		if seen[name] {
			return nil, fmt.Errorf("--cluster %q: cluster %s given twice", v, name)
		}
		ref, err := kube.ParseKubeconfigRef(path)
		if err != nil {
			return nil, usageError(fmt.Errorf("--cluster %q: %w", v, err))
		}
		seen[name] = true
		out = append(out, clusterKubeconfig{Name: name, Kubeconfig: ref})
	}
	return out, nil
}

// kubeconfigFlags name the control plane's client configuration as kubectl's flags do.
type kubeconfigFlags struct {
	kubeconfig, context, controlPlane string
}

func (f *kubeconfigFlags) register(flags *pflag.FlagSet) {
	flags.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the control plane (default: $KUBECONFIG, its files merged, "+
		"else ~/.kube/config, else the service account of the pod fleetflow runs in)")
	flags.StringVar(&f.context, "context", "", "the kubeconfig context of the control plane (default: its current context)")
	flags.StringVar(&f.controlPlane, "control-plane", "", "the same as --kubeconfig")
}

// given reports whether any of the flags was set.
func (f *kubeconfigFlags) given() bool {
	return f.kubeconfig != "" || f.context != "" || f.controlPlane != ""
}

// ref is the control plane's configuration the flags name.
func (f *kubeconfigFlags) ref() (kube.KubeconfigRef, error) {
	path := f.kubeconfig
	if f.controlPlane != "" {
		if path != "" && path != f.controlPlane {
			return kube.KubeconfigRef{}, usageError(fmt.Errorf("--control-plane %q and --kubeconfig %q name different files; "+
				"--control-plane is another name for --kubeconfig", f.controlPlane, path))
		}
		path = f.controlPlane
	}
	return kube.KubeconfigRef{Path: path, Context: f.context}, nil
}

// clients builds the control plane's clients, as kubectl would: from the kubeconfig and context given, else
// $KUBECONFIG or ~/.kube/config, else the service account of the pod fleetflow runs in (as the Helm chart
// deploys it).
func (f *kubeconfigFlags) clients() (*kube.Clients, error) {
	ref, err := f.ref()
	if err != nil {
		return nil, err
	}
	cp, err := kube.ClientsFor(ref)
	if err != nil {
		return nil, fmt.Errorf("control plane: %w", err)
	}
	return cp, nil
}

func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
}

type placerFlags struct {
	heartbeatTimeout, pendingTimeout, reservationTTL, statePruneGrace, failedApplyRetry, leaseTTL time.Duration
	gcPercent                                                                                     int
	nodeReportRate, nodeReportBurst                                                               float64
	fit                                                                                           string
}

func (f *placerFlags) register(flags *pflag.FlagSet) {
	flags.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", 30*time.Second, "a cluster silent this long is NotReady and its workloads fail over")
	flags.DurationVar(&f.pendingTimeout, "pending-timeout", 5*time.Minute, "a workload whose pods pend this long moves to another cluster that fits")
	flags.DurationVar(&f.reservationTTL, "reservation-ttl", 5*time.Minute, "how long a decision's reservations hold capacity before the cluster shows the pods")
	flags.DurationVar(&f.failedApplyRetry, "failed-apply-retry", 5*time.Minute, "how long after an applier gave up on an Apply (forbidden, invalid, an old CRD) it is sent again, when nothing else retried it")
	flags.DurationVar(&f.statePruneGrace, "state-prune-grace", time.Minute, "how long after the Deletes of a deleted workload's copies are stored what the state stream keeps of it is pruned")
	flags.DurationVar(&f.leaseTTL, "lease-ttl", app.DefaultLeaseTTL, "how long the placer lease outlives its holder's last renewal: a standby placer takes over about this long after the leader stops")
	flags.Float64Var(&f.nodeReportRate, "node-report-rate", lifecycle.DefaultNodeReportRate, "node reports a second the placer takes of each cluster on average, on the events stream's clock; the rest are refused unread (docs/security.md); a negative value takes every report")
	flags.Float64Var(&f.nodeReportBurst, "node-report-burst", lifecycle.DefaultNodeReportBurst, "node reports the placer takes of one cluster at once, above --node-report-rate (a big cluster republishing every node)")
	flags.StringVar(&f.fit, "fit", string(scheduler.FitNodes), "how a gang is found to fit a cluster: nodes (pack its pods onto the nodes, "+
		"as kube-scheduler would bind them) or summed (a comparison mode, Karmada's general estimator's way: the cluster's free resources "+
		"summed over its nodes cover the gang's summed requests)")
	flags.IntVar(&f.gcPercent, "gc-percent", app.PlacerGCPercent, "GOGC of this process (the fleet view is long-lived, so collecting less often saves CPU for memory); $GOGC wins when set, 0 keeps Go's default")
}

// validate refuses durations a placer cannot work with; zero or less would otherwise quietly mean a default.
func (f *placerFlags) validate() error {
	if err := positiveDurations(map[string]time.Duration{"--heartbeat-timeout": f.heartbeatTimeout,
		"--pending-timeout": f.pendingTimeout, "--reservation-ttl": f.reservationTTL, "--state-prune-grace": f.statePruneGrace,
		"--failed-apply-retry": f.failedApplyRetry, "--lease-ttl": f.leaseTTL}); err != nil {
		return err
	}
	if _, err := scheduler.ParseFitMode(f.fit); err != nil {
		return fmt.Errorf("--fit: %w", err)
	}
	if f.nodeReportRate == 0 {
		return errors.New("--node-report-rate 0: would refuse every node report; give a positive rate, or a negative one to take them all")
	}
	if f.nodeReportRate > 0 && f.nodeReportBurst < 1 {
		return fmt.Errorf("--node-report-burst %g: must be at least 1 with a positive --node-report-rate", f.nodeReportBurst)
	}
	return validGCPercent(f.gcPercent)
}

// validGCPercent refuses a negative --gc-percent, which would otherwise quietly mean Go's default.
func validGCPercent(percent int) error {
	if percent < 0 {
		return fmt.Errorf("--gc-percent %d: must be 0 (Go's default) or more", percent)
	}
	return nil
}

// positiveDurations fails on the first flag, in name order, whose duration is not positive.
func positiveDurations(flags map[string]time.Duration) error {
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if d := flags[name]; d <= 0 {
			return fmt.Errorf("%s %s: must be positive", name, d)
		}
	}
	return nil
}

// tuneGC sets the collector of a process that runs the placer (see app.PlacerGCPercent).
func (f *placerFlags) tuneGC() { app.TuneGCForPlacer(f.gcPercent, slog.Default()) }

func (f *placerFlags) config() placer.PlacerConfig {
	return placer.PlacerConfig{HeartbeatTimeout: f.heartbeatTimeout, PendingTimeout: f.pendingTimeout, ReservationTTL: f.reservationTTL,
		StatePruneGrace: f.statePruneGrace, FailedApplyRetry: f.failedApplyRetry, LeaseTTL: f.leaseTTL,
		NodeReportRate: f.nodeReportRate, NodeReportBurst: f.nodeReportBurst, Fit: scheduler.FitMode(f.fit)}
}

func newRunCommand() *cobra.Command {
	var bf busFlags
	var pf placerFlags
	var kf kubeconfigFlags
	var clusterFlags, watch, skip []string
	var uiListen, uiTokenFile string
	installCRDs := true
	cmd := &cobra.Command{
		Use:   "run [--kubeconfig KUBECONFIG] [--context CONTEXT] [--cluster NAME=KUBECONFIG[@CONTEXT]...]",
		Short: "Run every part of fleetflow in one process: producers, placer, status writer and per-cluster appliers",
		Long: `Run every part of fleetflow in one process against one control plane. Workload clusters are the Cluster
objects of the control plane; each --cluster registers one (its kubeconfig goes into a Secret in
fleetflow-system: only its context, with the files it names embedded). fleetflow's CRDs are applied to
the control plane unless --install-crds=false. The control plane is found as kubectl finds its cluster:
--kubeconfig and --context, else $KUBECONFIG, else ~/.kube/config, else the pod's service account.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if err := pf.validate(); err != nil {
				return err
			}
			if _, err := bf.streamOptions(); err != nil {
				return err
			}
			clusters, err := parseClusters(clusterFlags)
			if err != nil {
				return err
			}
			kinds, err := parseKinds(watch)
			if err != nil {
				return err
			}
			skipped, err := skippedNamespaces(skip)
			if err != nil {
				return err
			}
			uiToken, err := ui.ReadToken(uiTokenFile)
			if err != nil {
				return fmt.Errorf("--ui-token-file: %w", err)
			}
			cp, err := kf.clients()
			if err != nil {
				return err
			}
			if installCRDs {
				if err := app.InstallControlPlaneCRDs(ctx, cp, "fleetflow"); err != nil {
					return err
				}
			}
			for _, c := range clusters {
				data, err := kube.StandaloneKubeconfig(c.Kubeconfig)
				if err != nil {
					return fmt.Errorf("--cluster %s: %w", c.Name, err)
				}
				if err := app.RegisterCluster(ctx, cp, c.Name, data, nil, nil, "fleetflow"); err != nil {
					return err
				}
			}
			b, err := bf.open(ctx, "fleetflow-run")
			if err != nil {
				return err
			}
			defer b.Close()
			slog.Info("fleetflow running", "nats", b.URL)
			pf.tuneGC()
			all := &app.AllInOne{ControlPlane: cp, Kinds: kinds, Placer: pf.config(), SkippedNamespaces: skipped}
			if uiListen == "" {
				return all.Run(ctx, b, slog.Default())
			}
			return runWithUI(ctx, b, all, ui.RunOptions{Listen: uiListen, Token: uiToken, HeartbeatTimeout: pf.heartbeatTimeout})
		},
	}
	bf.register(cmd.Flags())
	pf.register(cmd.Flags())
	kf.register(cmd.Flags())
	cmd.Flags().StringVar(&bf.usersDir, "nats-users", "", "folder of every part's NATS user seed (fleetflow nats users --dir): each part connects as its own user, and an embedded server accepts only them")
	cmd.Flags().BoolVar(&installCRDs, "install-crds", true, "apply fleetflow's CRDs to the control plane at start (the Helm chart installs them itself)")
	cmd.Flags().StringArrayVar(&clusterFlags, "cluster", nil, "register a workload cluster as NAME=KUBECONFIG or NAME=KUBECONFIG@CONTEXT (repeatable); its kubeconfig Secret is written again at every start")
	cmd.Flags().StringSliceVar(&watch, "watch", nil, "extra workload kinds to place, as group/version/Kind, or version/Kind for the core group (built-in RI kinds and kinds named by policies or RIs are watched anyway)")
	registerSkipNamespaces(cmd, &skip)
	cmd.Flags().StringVar(&uiListen, "ui", "", "also serve the fleet view in the browser (as the ui command does) on this `ADDRESS`, e.g. "+ui.DefaultListen+"; empty serves none")
	cmd.Flags().StringVar(&uiTokenFile, "ui-token-file", "", "file holding the bearer token the fleet view asks for (default: $"+ui.TokenEnv+", else none)")
	return cmd
}

// runWithUI runs every part and the fleet view until ctx is done or one of them ends.
func runWithUI(ctx context.Context, b *app.Bus, all *app.AllInOne, opts ui.RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The view reads as the UI's own, read-only NATS user when the server has users.
	view, release, err := b.As(natsauth.UI, "", slog.Default())
	if err != nil {
		return err
	}
	defer release()
	served, ran := make(chan error, 1), make(chan error, 1)
	go func() { served <- ui.Run(ctx, view.JetStream, opts, slog.Default()) }()
	go func() { ran <- all.Run(ctx, b, slog.Default()) }()
	select {
	case err = <-served: // a view that cannot listen stops the process, as a bad flag would
		cancel()
		if runErr := <-ran; err == nil {
			err = runErr
		}
	case err = <-ran:
		cancel()
		if uiErr := <-served; err == nil {
			err = uiErr
		}
	}
	return err
}

// registerSkipNamespaces adds --skip-namespaces to a command that runs the control-plane producer.
func registerSkipNamespaces(cmd *cobra.Command, skip *[]string) {
	cmd.Flags().StringSliceVar(skip, "skip-namespaces", app.DefaultSkippedNamespaces,
		"control-plane namespaces whose workloads fleetflow leaves alone (never placed nor annotated), as regular expressions matching whole names, "+
			"comma-separated or repeated; \"\" for none. Quote a pattern holding a comma: --skip-namespaces='\"team-[0-9]{1,3}\"'")
}

// skippedNamespaces compiles --skip-namespaces; nil, for no pattern, skips nothing.
func skippedNamespaces(patterns []string) (*regexp.Regexp, error) {
	re, err := app.SkippedNamespaces(patterns)
	if err != nil {
		return nil, fmt.Errorf("--skip-namespaces: %w", err)
	}
	return re, nil
}

func newProducerCommand() *cobra.Command {
	var bf busFlags
	var kf kubeconfigFlags
	var cluster string
	var watch, skip []string
	var heartbeat time.Duration
	cmd := &cobra.Command{
		Use:   "producer [--kubeconfig KUBECONFIG] [--context CONTEXT] | --cluster NAME=KUBECONFIG[@CONTEXT]",
		Short: "Publish control-plane changes, or one workload cluster's nodes, APIs, heartbeats and statuses",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if kf.given() && cluster != "" {
				return usageError(fmt.Errorf("give the control plane (--kubeconfig, --context) or --cluster, not both"))
			}
			if err := positiveDurations(map[string]time.Duration{"--heartbeat": heartbeat}); err != nil {
				return err
			}
			if _, err := bf.streamOptions(); err != nil {
				return err
			}
			kinds, err := parseKinds(watch)
			if err != nil {
				return err
			}
			builtin, err := app.BuiltinKinds()
			if err != nil {
				return err
			}
			kinds = append(builtin, kinds...)
			skipped, err := skippedNamespaces(skip)
			if err != nil {
				return err
			}
			// Flags are checked and clients built before the bus opens, so a mistake starts no server.
			var name string
			var clients *kube.Clients
			if cluster == "" {
				clients, err = kf.clients()
			} else {
				name, clients, err = clusterClients(cluster)
			}
			if err != nil {
				return err
			}
			b, err := bf.open(ctx, "fleetflow-producer")
			if err != nil {
				return err
			}
			defer b.Close()
			if cluster == "" {
				return app.RunProducer(ctx, b, clients, kinds, skipped, slog.Default())
			}
			return app.RunClusterProducer(ctx, b, name, clients, kinds, heartbeat, slog.Default())
		},
	}
	bf.register(cmd.Flags())
	kf.register(cmd.Flags())
	cmd.Flags().StringVar(&cluster, "cluster", "", "a workload cluster as NAME=KUBECONFIG or NAME=KUBECONFIG@CONTEXT, instead of the control plane")
	cmd.Flags().StringSliceVar(&watch, "watch", nil, "extra workload kinds to publish, as group/version/Kind, or version/Kind for the core group (built-in RI kinds and kinds named by policies or RIs are watched anyway)")
	registerSkipNamespaces(cmd, &skip)
	cmd.Flags().DurationVar(&heartbeat, "heartbeat", producers.DefaultHeartbeat,
		"interval between a cluster's heartbeats; keep it well under the placer's --heartbeat-timeout (a fifth or less)")
	return cmd
}

func newPlacerCommand() *cobra.Command {
	var bf busFlags
	var pf placerFlags
	cmd := &cobra.Command{
		Use:   "placer",
		Short: "Rebuild the fleet view from the streams, then turn fleet events into placement decisions",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if err := pf.validate(); err != nil {
				return err
			}
			b, err := bf.open(ctx, "fleetflow-placer")
			if err != nil {
				return err
			}
			defer b.Close()
			pf.tuneGC()
			return app.RunPlacer(ctx, b, pf.config(), slog.Default())
		},
	}
	bf.register(cmd.Flags())
	pf.register(cmd.Flags())
	return cmd
}

func newStatusCommand() *cobra.Command {
	var bf busFlags
	var kf kubeconfigFlags
	var heartbeatTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "status [--kubeconfig KUBECONFIG] [--context CONTEXT]",
		Short: "Copy workload status and placement outcomes back onto control-plane objects",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if err := positiveDurations(map[string]time.Duration{"--heartbeat-timeout": heartbeatTimeout}); err != nil {
				return err
			}
			if _, err := bf.streamOptions(); err != nil {
				return err
			}
			cp, err := kf.clients()
			if err != nil {
				return err
			}
			b, err := bf.open(ctx, "fleetflow-status")
			if err != nil {
				return err
			}
			defer b.Close()
			return app.RunStatusWriter(ctx, b, cp, heartbeatTimeout, slog.Default())
		},
	}
	bf.register(cmd.Flags())
	kf.register(cmd.Flags())
	cmd.Flags().DurationVar(&heartbeatTimeout, "heartbeat-timeout", 30*time.Second, "a cluster silent this long is shown NotReady")
	return cmd
}

func newApplierCommand() *cobra.Command {
	var bf busFlags
	var cluster string
	cmd := &cobra.Command{
		Use:   "applier --cluster NAME=KUBECONFIG[@CONTEXT]",
		Short: "Carry out the placement decisions of one workload cluster",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if _, err := bf.streamOptions(); err != nil {
				return err
			}
			name, clients, err := clusterClients(cluster)
			if err != nil {
				return err
			}
			b, err := bf.open(ctx, "fleetflow-applier-"+name)
			if err != nil {
				return err
			}
			defer b.Close()
			return app.RunApplier(ctx, b, name, clients, slog.Default())
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringVar(&cluster, "cluster", "", "the workload cluster as NAME=KUBECONFIG or NAME=KUBECONFIG@CONTEXT")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}
