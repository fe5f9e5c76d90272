package localfleet

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Binaries that Options.RunPods needs besides etcd and kube-apiserver, looked up in Options.BinDir.
const (
	SchedulerBinary         = "kube-scheduler"
	ControllerManagerBinary = "kube-controller-manager"
	KWOKBinary              = "kwok"
)

const (
	// KWOKNodeAnnotation marks the nodes that a fleet's kwok runs (Options.RunPods): seeding puts it on every
	// node, with the value KWOKNodeAnnotationValue, and kwok manages exactly the nodes that carry it.
	KWOKNodeAnnotation      = "kwok.x-k8s.io/node"
	KWOKNodeAnnotationValue = "fake"
	// KWOKCompleteDelayAnnotation on a pod makes kwok complete it (Succeeded, containers exit 0) that long (a
	// Go duration such as "30s") after it runs, whoever owns it (a Job, a PyTorchJob, none); a pod owned by a
	// Job without it completes at once, any other pod without it runs until deleted.
	KWOKCompleteDelayAnnotation = "pod-complete.stage.kwok.x-k8s.io/delay"
)

// kwokConfig is kwok's configuration: its node and pod stages, which the kwok binary has none of by default.
//
//go:embed kwok.yaml
var kwokConfig []byte

// RunPodsBinaries are the binaries Options.RunPods starts for each workload cluster.
var RunPodsBinaries = []string{SchedulerBinary, ControllerManagerBinary, KWOKBinary}

// Component is a process that runs beside a workload cluster's apiserver: kube-scheduler,
// kube-controller-manager or kwok when Options.RunPods is set, or a framework operator (StartOperators).
type Component struct {
	// Name is the binary's name.
	Name    string
	PID     int
	LogPath string
	// Port serves the component's /healthz on 127.0.0.1; 0 for an operator started by StartOperatorRunners.
	Port int
	// Operator is set for a framework operator (StartOperators), unset for kube-scheduler,
	// kube-controller-manager and kwok.
	Operator bool
	proc     *process
}

// componentUsers are the users of the token file for the components, each with the cluster role the
// apiserver's bootstrap RBAC policy grants that user name.
var componentUsers = map[string]string{
	SchedulerBinary:         "system:kube-scheduler",
	ControllerManagerBinary: "system:kube-controller-manager",
}

// startComponents starts kube-scheduler, kube-controller-manager and kwok for every workload cluster, in
// parallel, and waits until all answer /healthz.
func (f *Fleet) startComponents(ctx context.Context) error {
	errs := make([]error, len(f.Workloads))
	var wg sync.WaitGroup
	for i, cluster := range f.Workloads {
		wg.Go(func() {
			errs[i] = f.startClusterComponents(ctx, cluster)
		})
	}
	wg.Wait()
	return firstRealError(errs)
}

func (f *Fleet) startClusterComponents(ctx context.Context, cluster *Cluster) error {
	clusterDir := filepath.Join(f.opts.Dir, clustersDirName, cluster.Name)
	caFile := filepath.Join(clusterDir, "certs", "apiserver.crt")
	kubeconfigs := map[string]string{}
	for name, user := range componentUsers {
		path := filepath.Join(clusterDir, name+".kubeconfig")
		if err := writeKubeconfigAs(path, cluster.Name, cluster.Server, cluster.caPEM, user, f.auth.componentTokens[name]); err != nil {
			return fmt.Errorf("local fleet: %s: %w", cluster.Name, err)
		}
		kubeconfigs[name] = path
	}
	kwokDir := filepath.Join(clusterDir, "kwok")
	if err := os.MkdirAll(kwokDir, 0o755); err != nil {
		return fmt.Errorf("local fleet: %s: %w", cluster.Name, err)
	}
	kwokConfigPath := filepath.Join(kwokDir, "kwok.yaml")
	if err := os.WriteFile(kwokConfigPath, kwokConfig, 0o644); err != nil {
		return fmt.Errorf("local fleet: %s: %w", cluster.Name, err)
	}

	schedulerConfig, err := schedulerConfigArgs(clusterDir, kubeconfigs[SchedulerBinary], f.opts.SchedulerScoring)
	if err != nil {
		return fmt.Errorf("local fleet: %s: %w", cluster.Name, err)
	}

	delegated := func(kubeconfig string) []string {
		// Delegated authentication and authorization of their own /healthz and /metrics through the apiserver.
		return []string{
			"--kubeconfig=" + kubeconfig,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			// The apiserver has no client CA, so it publishes no extension-apiserver-authentication config map.
			"--authentication-skip-lookup=true",
			"--bind-address=127.0.0.1",
			// One cluster, one instance: no leader election, so they start working at once.
			"--leader-elect=false",
		}
	}
	specs := []struct {
		name string
		args func(port int) []string
		env  []string
	}{
		{SchedulerBinary, func(port int) []string {
			return append(append(delegated(kubeconfigs[SchedulerBinary]), fmt.Sprintf("--secure-port=%d", port)), schedulerConfig...)
		}, nil},
		{ControllerManagerBinary, func(port int) []string {
			return append(delegated(kubeconfigs[ControllerManagerBinary]),
				fmt.Sprintf("--secure-port=%d", port),
				// Each controller acts as its own service account, as in a real cluster; the token
				// controller signs their tokens with the key the apiserver verifies.
				"--use-service-account-credentials=true",
				"--service-account-private-key-file="+f.auth.saPrivateFile,
				"--root-ca-file="+caFile,
				"--cluster-name="+cluster.Name,
			)
		}, nil},
		{KWOKBinary, func(port int) []string {
			return []string{
				"--kubeconfig=" + cluster.KubeconfigPath,
				"--config=" + kwokConfigPath,
				"--manage-all-nodes=false",
				"--manage-nodes-with-annotation-selector=" + KWOKNodeAnnotation + "=" + KWOKNodeAnnotationValue,
				"--node-lease-duration-seconds=40",
				"--cidr=10.244.0.1/16",
				fmt.Sprintf("--server-address=127.0.0.1:%d", port),
			}
			// kwok also reads $KWOK_WORKDIR/kwok.yaml, by default ~/.kwok/kwok.yaml: keep a user's file out.
		}, []string{"KWOK_WORKDIR=" + kwokDir}},
	}
	for _, spec := range specs {
		if err := f.startComponent(ctx, cluster, spec.name, spec.args, spec.env); err != nil {
			return err
		}
	}
	return nil
}

// componentSpec is one process to run beside a workload cluster's apiserver.
type componentSpec struct {
	name string
	args func(port int) []string
	env  []string
	// port is the one its /healthz will be on; 0 picks a free one on each attempt.
	port     int
	operator bool
	// webhookPort, if set, must complete a TLS handshake too before the component counts as started: /healthz
	// answers before an operator's webhook server listens, and until it does the apiserver rejects every
	// object the webhooks admit.
	webhookPort int
}

func (f *Fleet) startComponent(ctx context.Context, cluster *Cluster, name string, args func(port int) []string, env []string) error {
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		err := f.launch(ctx, cluster, componentSpec{name: name, args: args, env: env})
		if err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
		lastErr = err
		f.opts.Logger.Info("component port was taken, retrying with a new port", "cluster", cluster.Name, "component", name, "attempt", attempt)
	}
	return lastErr
}

// launch starts one component and waits until its /healthz answers ok; a component that could not bind its
// port returns an error that wraps errPortInUse, for the caller to retry with another.
func (f *Fleet) launch(ctx context.Context, cluster *Cluster, spec componentSpec) error {
	clusterDir := filepath.Join(f.opts.Dir, clustersDirName, cluster.Name)
	component := cluster.Name + "/" + spec.name
	scheme := "https"
	if spec.name == KWOKBinary || spec.operator {
		scheme = "http"
	}
	// Their serving certificates are self-signed in memory; only the answer matters here.
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // loopback health probe
	}
	port := spec.port
	if port == 0 {
		ports, err := freePorts(1)
		if err != nil {
			return fmt.Errorf("local fleet: %s: %w", component, err)
		}
		port = ports[0]
	}
	started := time.Now()
	f.progress(component, StageStarting, started, "")
	proc, err := startProcess(processSpec{
		name:    spec.name + " " + cluster.Name,
		binary:  filepath.Join(f.opts.BinDir, spec.name),
		args:    spec.args(port),
		env:     spec.env,
		logPath: filepath.Join(clusterDir, spec.name+".log"),
		pidPath: filepath.Join(clusterDir, spec.name+".pid"),
		detach:  f.opts.Detach,
	})
	if err != nil {
		return fmt.Errorf("local fleet: %w", err)
	}
	c := &Component{Name: spec.name, PID: proc.pid, LogPath: proc.logPath, Port: port, Operator: spec.operator, proc: proc}
	url := fmt.Sprintf("%s://127.0.0.1:%d/healthz", scheme, port)
	err = f.waitReady(ctx, proc, component, started, func(ctx context.Context) (bool, string) {
		return probe(ctx, client, url, "", func(body string) bool { return body == "ok" })
	})
	if err == nil && spec.webhookPort != 0 {
		if err = waitListening(ctx, spec.webhookPort); err != nil {
			err = fmt.Errorf("local fleet: %s: webhooks on port %d: %w", component, spec.webhookPort, err)
		}
	}
	if err != nil {
		_ = proc.stop(ctx, f.opts.StopGrace)
		return err
	}
	f.addComponent(cluster, c)
	if spec.operator {
		// Started after Start's watchExits.
		f.watchExit(proc)
	}
	f.progress(component, StageReady, started, url)
	return nil
}

// addComponent records a started component of cluster.
func (f *Fleet) addComponent(cluster *Cluster, c *Component) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cluster.Components = append(cluster.Components, c)
}

// componentProcesses returns the processes of every component of every workload cluster.
func (f *Fleet) componentProcesses() []*process {
	f.mu.Lock()
	defer f.mu.Unlock()
	var procs []*process
	for _, c := range f.Workloads {
		for _, comp := range c.Components {
			procs = append(procs, comp.proc)
		}
	}
	return procs
}
