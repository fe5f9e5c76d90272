package localfleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Operator is a framework operator the local fleet can run against a workload cluster, out of cluster, as
// one process per cluster: an operator needs its CRDs, which fleetflow copies to a workload cluster itself,
// so it starts only once they are served there.
type Operator struct {
	// Name is the operator's name in `fleet up --operators` and its binary's name in Options.BinDir.
	Name string
	// CRDs are the names of the CustomResourceDefinitions it watches (e.g. "pytorchjobs.kubeflow.org"); it
	// starts once all are served in the cluster.
	CRDs []string
	// Args returns its flags: the cluster's admin kubeconfig, health and metrics on env's loopback ports, no
	// leader election, and webhooks only those in Webhooks.
	Args func(OperatorEnv) []string
	// Config, if set, returns the content of env.Dir/config.yaml, written before each start, for an
	// operator whose settings are only in a file.
	Config func(OperatorEnv) []byte
	// Webhooks are the admission webhooks the operator cannot work without. It serves them on
	// 127.0.0.1:env.WebhookPort with the cluster's serving certificate, which each start copies to
	// env.Dir/tls.{crt,key}, and each start registers them with the cluster by URL.
	Webhooks []OperatorWebhook
}

// OperatorEnv is what an operator's flags are made of.
type OperatorEnv struct {
	Cluster string
	// Kubeconfig is the cluster's admin kubeconfig.
	Kubeconfig string
	// HealthPort must serve GET /healthz (answer "ok") on 127.0.0.1; it tells when the operator is up.
	HealthPort int
	// MetricsPort is free on 127.0.0.1, for an operator that cannot turn its metrics off.
	MetricsPort int
	// WebhookPort is free on 127.0.0.1, for the webhooks of an operator that has Webhooks.
	WebhookPort int
	// Dir is the operator's own directory under the cluster directory, for any file it needs.
	Dir string
	// CertDir holds the cluster's serving certificate (apiserver.crt, self-signed, valid for 127.0.0.1)
	// and key (apiserver.key).
	CertDir string
}

// OperatorNames returns the names of the operators the local fleet knows, sorted.
func OperatorNames() []string {
	names := make([]string, 0, len(operatorCatalog))
	for _, op := range operatorCatalog {
		names = append(names, op.Name)
	}
	slices.Sort(names)
	return names
}

// LookupOperator returns the operator of that name, or an error that lists the known ones.
func LookupOperator(name string) (Operator, error) {
	for _, op := range operatorCatalog {
		if op.Name == name {
			return op, nil
		}
	}
	return Operator{}, fmt.Errorf("local fleet: unknown operator %q (known: %s)", name, strings.Join(OperatorNames(), ", "))
}

// CheckOperatorBinaries reports whether binDir holds the binaries of the named operators; an unknown name is
// an error too.
func CheckOperatorBinaries(binDir string, names ...string) error {
	for _, name := range names {
		if _, err := LookupOperator(name); err != nil {
			return err
		}
	}
	return checkBinaries(binDir, "tools", names...)
}

// operatorEnv returns the environment of op in cluster, with new free ports, and creates its directory.
func operatorEnv(dir, cluster, kubeconfig string, op Operator) (OperatorEnv, error) {
	ports, err := freePorts(3)
	if err != nil {
		return OperatorEnv{}, err
	}
	env := OperatorEnv{
		Cluster:     cluster,
		Kubeconfig:  kubeconfig,
		HealthPort:  ports[0],
		MetricsPort: ports[1],
		WebhookPort: ports[2],
		Dir:         filepath.Join(dir, clustersDirName, cluster, op.Name),
		CertDir:     filepath.Join(dir, clustersDirName, cluster, "certs"),
	}
	return env, os.MkdirAll(env.Dir, 0o755)
}

// prepareOperator writes the files op reads and registers its webhooks in the cluster, before each start.
func prepareOperator(ctx context.Context, cfg *rest.Config, op Operator, env OperatorEnv) error {
	if op.Config != nil {
		if err := os.WriteFile(filepath.Join(env.Dir, "config.yaml"), op.Config(env), 0o644); err != nil {
			return fmt.Errorf("write config: %w", err)
		}
	}
	if len(op.Webhooks) == 0 {
		return nil
	}
	return registerWebhooks(ctx, cfg, op, env)
}

// StartOperatorsEverywhere runs StartOperators for every workload cluster at once and returns when all have
// started, or with every cluster's error.
func (f *Fleet) StartOperatorsEverywhere(ctx context.Context, names ...string) error {
	errs := make([]error, len(f.Workloads))
	var wg sync.WaitGroup
	for i, c := range f.Workloads {
		wg.Go(func() { errs[i] = f.StartOperators(ctx, c.Name, names...) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StartOperators waits until the CRDs of each named operator are served in the workload cluster, then starts
// the operator there and waits until it answers /healthz. Each runs as a component of the cluster: its log
// and pid file are clusters/<cluster>/<operator>.{log,pid}, Stop and Down stop it, and an unexpected exit
// closes Exited. ctx bounds the waiting, which lasts until fleetflow has copied the CRDs.
func (f *Fleet) StartOperators(ctx context.Context, cluster string, names ...string) error {
	c, err := f.operatorCluster(cluster)
	if err != nil {
		return err
	}
	ops := make([]Operator, 0, len(names))
	for _, name := range names {
		op, err := LookupOperator(name)
		if err != nil {
			return fmt.Errorf("local fleet: %s: %w", cluster, err)
		}
		ops = append(ops, op)
	}
	if err := CheckOperatorBinaries(f.opts.BinDir, names...); err != nil {
		return err
	}
	for _, op := range ops {
		log := f.opts.Logger.With("cluster", cluster, "operator", op.Name)
		log.Info("waiting for the operator's CRDs", "crds", op.CRDs)
		if err := WaitCRDsServed(ctx, c.RESTConfig(), op.CRDs); err != nil {
			return fmt.Errorf("local fleet: operator %s in cluster %s: %w", op.Name, cluster, err)
		}
		if err := f.startOperator(ctx, c, op); err != nil {
			return err
		}
		log.Info("operator running")
	}
	return writeState(f)
}

func (f *Fleet) operatorCluster(name string) (*Cluster, error) {
	for _, c := range f.Workloads {
		if c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("local fleet: no workload cluster %q in %s", name, f.Dir)
}

func (f *Fleet) startOperator(ctx context.Context, cluster *Cluster, op Operator) error {
	var env OperatorEnv
	args := func(int) []string { return op.Args(env) }
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		var err error
		if env, err = operatorEnv(f.Dir, cluster.Name, cluster.KubeconfigPath, op); err != nil {
			return fmt.Errorf("local fleet: operator %s in cluster %s: %w", op.Name, cluster.Name, err)
		}
		if err := prepareOperator(ctx, cluster.RESTConfig(), op, env); err != nil {
			return fmt.Errorf("local fleet: operator %s in cluster %s: %w", op.Name, cluster.Name, err)
		}
		spec := componentSpec{name: op.Name, args: args, port: env.HealthPort, operator: true}
		if len(op.Webhooks) > 0 {
			spec.webhookPort = env.WebhookPort
		}
		err = f.launch(ctx, cluster, spec)
		if err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
		lastErr = err
	}
	return lastErr
}

// waitListening waits until a TLS server answers on 127.0.0.1:port. It completes the handshake so that the
// server logs no aborted one.
func waitListening(ctx context.Context, port int) error {
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	dialer := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // loopback readiness probe
	return pollUntil(ctx, 100*time.Millisecond, func() bool {
		conn, err := dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	})
}

// RunOperator is the body of a process that `fleet up --operators` starts for each operator and workload
// cluster (fleetflow fleet run-operator), so that a detached fleet gets its operators too: it waits until the
// operator's CRDs are served in the cluster of the fleet in dir, then replaces itself with the operator
// binary, keeping its pid, pid file and log.
func RunOperator(ctx context.Context, dir, binDir, cluster, name string) error {
	op, err := LookupOperator(name)
	if err != nil {
		return err
	}
	if err := CheckOperatorBinaries(binDir, name); err != nil {
		return err
	}
	kubeconfig := filepath.Join(dir, clustersDirName, cluster, "kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("local fleet: operator %s in cluster %s: %w", name, cluster, err)
	}
	if err := WaitCRDsServed(ctx, cfg, op.CRDs); err != nil {
		return fmt.Errorf("local fleet: operator %s in cluster %s: %w", name, cluster, err)
	}
	env, err := operatorEnv(dir, cluster, kubeconfig, op)
	if err != nil {
		return fmt.Errorf("local fleet: operator %s in cluster %s: %w", name, cluster, err)
	}
	if err := prepareOperator(ctx, cfg, op, env); err != nil {
		return fmt.Errorf("local fleet: operator %s in cluster %s: %w", name, cluster, err)
	}
	binary := filepath.Join(binDir, name)
	argv := append([]string{binary}, op.Args(env)...)
	fmt.Fprintf(os.Stderr, "local fleet: CRDs %s served in %s; running %s\n", strings.Join(op.CRDs, ", "), cluster, strings.Join(argv, " "))
	if err := syscall.Exec(binary, argv, os.Environ()); err != nil {
		return fmt.Errorf("local fleet: operator %s in cluster %s: exec %s: %w", name, cluster, binary, err)
	}
	return nil // not reached
}

// StartOperatorRunners starts, for each named operator, a process that runs command (whose last arguments
// name the cluster and the operator, see RunOperator) in the workload cluster, without waiting for the
// operator's CRDs. Each is a component of the cluster like the operator it becomes.
func (f *Fleet) StartOperatorRunners(cluster string, command func(operator string) (binary string, args []string), names ...string) error {
	c, err := f.operatorCluster(cluster)
	if err != nil {
		return err
	}
	if err := CheckOperatorBinaries(f.opts.BinDir, names...); err != nil {
		return err
	}
	clusterDir := filepath.Join(f.opts.Dir, clustersDirName, cluster)
	for _, name := range names {
		binary, args := command(name)
		proc, err := startProcess(processSpec{
			name:    name + " " + cluster,
			binary:  binary,
			args:    args,
			logPath: filepath.Join(clusterDir, name+".log"),
			pidPath: filepath.Join(clusterDir, name+".pid"),
			detach:  f.opts.Detach,
		})
		if err != nil {
			return fmt.Errorf("local fleet: operator %s in cluster %s: %w", name, cluster, err)
		}
		f.addComponent(c, &Component{Name: name, PID: proc.pid, LogPath: proc.logPath, Operator: true, proc: proc})
		f.watchExit(proc)
	}
	return writeState(f)
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// WaitCRDsServed waits until each named CRD is Established and discovery lists its resource in every served
// version, or ctx ends; the error then names the CRDs still missing.
func WaitCRDsServed(ctx context.Context, cfg *rest.Config, names []string) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	missing := slices.Clone(names)
	var last error
	err = pollUntil(ctx, 250*time.Millisecond, func() bool {
		missing = slices.DeleteFunc(missing, func(name string) bool {
			served, err := crdServed(ctx, client, disco, name)
			if err != nil {
				last = err
			}
			return served
		})
		return len(missing) == 0
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("CRDs %s not served (%w; last error: %w)", strings.Join(missing, ", "), err, last)
		}
		return fmt.Errorf("CRDs %s not served: %w", strings.Join(missing, ", "), err)
	}
	return nil
}

func crdServed(ctx context.Context, client dynamic.Interface, disco discovery.DiscoveryInterface, name string) (bool, error) {
	crd, err := client.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	established := false
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false, nil
	}
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if served, _ := m["served"].(bool); !served {
			continue
		}
		version, _ := m["name"].(string)
		list, err := disco.ServerResourcesForGroupVersion(group + "/" + version)
		if err != nil {
			return false, nil // not in discovery yet: poll again
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
			return false, nil
		}
	}
	return true, nil
}

// Operator process states, as OperatorProcessState reports them.
const (
	OperatorRunning     = "running"
	OperatorWaitingCRDs = "waiting for CRDs"
	OperatorGone        = "gone"
)

// OperatorProcessState says whether an operator component runs, still waits for its CRDs (its process is
// not yet the operator's binary, see RunOperator), or is gone.
func OperatorProcessState(c ComponentState) string {
	if !ProcessAlive(c.PID) {
		return OperatorGone
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", c.PID))
	if err == nil && filepath.Base(exe) != c.Name {
		return OperatorWaitingCRDs
	}
	return OperatorRunning
}

// RunningOperators returns the names of the operators StartOperators has started in the workload cluster and
// seen answer /healthz and listen for their webhooks, so a test can submit workloads only once they are up.
func (f *Fleet) RunningOperators(cluster string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for _, c := range f.Workloads {
		if c.Name != cluster {
			continue
		}
		for _, comp := range c.Components {
			if comp.Operator && comp.Port != 0 {
				names = append(names, comp.Name)
			}
		}
	}
	return names
}
