package localfleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
)

// ControlPlaneName is the name of the control-plane cluster every fleet has next to its workload clusters.
const ControlPlaneName = "control-plane"

const (
	// Binary names looked up in Options.BinDir.
	EtcdBinary      = "etcd"
	APIServerBinary = "kube-apiserver"

	// EtcdDataDirName is etcd's data directory under the fleet directory.
	EtcdDataDirName = "etcd"

	clustersDirName = "clusters"
	markerFileName  = ".fleetflow-fleet"
	logTailLines    = 20
	startAttempts   = 3
)

// Options configure Start.
type Options struct {
	// Dir holds everything of the fleet: etcd data, certificates, kubeconfigs, logs, pid files and the
	// state file. It is created if missing; files of a previous, stopped fleet in it are replaced.
	Dir string
	// Clusters names the workload clusters (DNS labels). The control plane is added as ControlPlaneName.
	Clusters []string
	// BinDir holds the etcd and kube-apiserver binaries; default "bin".
	BinDir string
	// Logger gets structured progress and diagnostics; default slog.Default().
	Logger *slog.Logger
	// Progress, when set, is called as each process starts, waits for readiness, and becomes ready. The
	// apiservers start in parallel, so it is called from several goroutines at once.
	Progress func(Progress)
	// StartTimeout bounds the whole startup; default 3 minutes.
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL; default 10 seconds.
	StopGrace time.Duration
	// Detach leaves the processes running when this process exits (fleet up --detach). Otherwise the
	// kernel kills them when this process dies, so a crashed test cannot leak them.
	Detach bool
	// ExtraAPIServerArgs are appended to every apiserver's flags.
	ExtraAPIServerArgs []string
	// RunPods also starts, for each workload cluster, a kube-scheduler, a kube-controller-manager and a
	// kwok, so that the cluster behaves like one: controllers create pods, the scheduler binds them to
	// nodes, and kwok runs the nodes that seeding marks with KWOKNodeAnnotation (Ready, with their
	// capacity and a lease) and the pods bound to them (Running; Job pods Succeeded). It needs the
	// RunPodsBinaries in BinDir.
	RunPods bool
}

// Progress reports a step of startup.
type Progress struct {
	// Component is "etcd" or a cluster name.
	Component string
	Stage     Stage
	// Elapsed is the time since this component was started.
	Elapsed time.Duration
	// Detail is the last readiness answer while waiting, or the endpoint once ready.
	Detail string
}

// Stage is a step in a component's startup.
type Stage string

const (
	StageStarting Stage = "starting"
	StageWaiting  Stage = "waiting"
	StageReady    Stage = "ready"
)

func (p Progress) String() string {
	switch p.Stage {
	case StageStarting:
		return fmt.Sprintf("%s: starting", p.Component)
	case StageWaiting:
		return fmt.Sprintf("%s: waiting to become ready (%s): %s", p.Component, p.Elapsed.Round(time.Second), p.Detail)
	default:
		return fmt.Sprintf("%s: ready in %s at %s", p.Component, p.Elapsed.Round(100*time.Millisecond), p.Detail)
	}
}

// Cluster is one running apiserver of the fleet.
type Cluster struct {
	Name string
	// Server is the https URL of the apiserver on loopback.
	Server         string
	KubeconfigPath string
	EtcdPrefix     string
	LogPath        string
	PID            int
	Port           int
	// Components run beside the apiserver of a workload cluster when Options.RunPods is set.
	Components []*Component
	caPEM      []byte
	token      string
	proc       *process
}

// RESTConfig returns a new admin client configuration for the cluster; callers may change it freely.
func (c *Cluster) RESTConfig() *rest.Config { return restConfig(c.Server, c.caPEM, c.token) }

// Fleet is a running local fleet: one etcd and one apiserver per cluster.
type Fleet struct {
	Dir string
	// ControlPlane is the apiserver users submit workloads to.
	ControlPlane *Cluster
	// Workloads are the workload clusters in the order of Options.Clusters.
	Workloads []*Cluster
	// EtcdURL is the client URL of the shared etcd.
	EtcdURL string

	etcd *process
	auth *fleetAuth
	// mu guards the clusters' Components, to which StartOperators adds while the fleet runs.
	mu        sync.Mutex
	stateMu   sync.Mutex
	opts      Options
	startedAt time.Time
	stopOnce  sync.Once
	stopErr   error
	stopping  chan struct{}
	exited    chan struct{}
	exitOnce  sync.Once
	exitErr   error
}

// Clusters returns the control plane followed by the workload clusters.
func (f *Fleet) Clusters() []*Cluster {
	var clusters []*Cluster
	if f.ControlPlane != nil {
		clusters = append(clusters, f.ControlPlane)
	}
	return append(clusters, f.Workloads...)
}

// Cluster returns the cluster with the given name, the control plane included.
func (f *Fleet) Cluster(name string) (*Cluster, bool) {
	for _, c := range f.Clusters() {
		if c.Name == name {
			return c, true
		}
	}
	return nil, false
}

// PIDs returns the pids of every fleet process, etcd first, then the apiservers, then the components.
func (f *Fleet) PIDs() []int {
	pids := []int{f.etcd.pid}
	for _, c := range f.Clusters() {
		pids = append(pids, c.PID)
	}
	for _, p := range f.componentProcesses() {
		pids = append(pids, p.pid)
	}
	return pids
}

// RunsPods reports whether the fleet was started with Options.RunPods.
func (f *Fleet) RunsPods() bool { return f.opts.RunPods }

// Exited is closed when a fleet process exits without Stop having been called; ExitErr then says which.
func (f *Fleet) Exited() <-chan struct{} { return f.exited }

// ExitErr describes the first process that exited on its own, with the end of its log, or returns nil.
func (f *Fleet) ExitErr() error {
	select {
	case <-f.exited:
		return f.exitErr
	default:
		return nil
	}
}

// Start starts one etcd and an apiserver for the control plane and for each workload cluster, waits until
// all answer ready, and writes kubeconfigs, pid files and the state file under opts.Dir. If anything fails
// it stops whatever it started and returns an error that carries the end of the failing process's log.
// ctx bounds startup only; the fleet runs until Stop.
func Start(ctx context.Context, opts Options) (_ *Fleet, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := prepareDir(opts.Dir); err != nil {
		return nil, err
	}
	fleet := &Fleet{
		Dir:       opts.Dir,
		opts:      opts,
		startedAt: time.Now(),
		stopping:  make(chan struct{}),
		exited:    make(chan struct{}),
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	defer func() {
		if err != nil {
			if stopErr := fleet.Stop(context.Background()); stopErr != nil {
				opts.Logger.Warn("stopping the partly started fleet", "dir", opts.Dir, "error", stopErr)
			}
		}
	}()

	if fleet.auth, err = writeFleetAuth(filepath.Join(opts.Dir, "auth")); err != nil {
		return nil, fmt.Errorf("local fleet: write credentials: %w", err)
	}
	if err := fleet.startEtcd(ctx); err != nil {
		return nil, err
	}
	names := append([]string{ControlPlaneName}, opts.Clusters...)
	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			// Each goroutine writes only its own index; the record callback keeps a started but not yet
			// ready apiserver reachable for Stop if startup fails.
			_, errs[i] = fleet.startAPIServer(ctx, name, func(c *Cluster) { clusters[i] = c })
			if errs[i] != nil {
				cancel() // one failure is enough: stop waiting for the others
			}
		})
	}
	wg.Wait()
	if err := firstRealError(errs); err != nil {
		// Keep the partly started apiservers reachable for Stop.
		fleet.adoptStarted(clusters)
		return nil, err
	}
	fleet.ControlPlane = clusters[0]
	fleet.Workloads = clusters[1:]
	if opts.RunPods {
		if err := fleet.startComponents(ctx); err != nil {
			return nil, err
		}
	}
	if err := writeState(fleet); err != nil {
		return nil, err
	}
	fleet.watchExits()
	opts.Logger.Info("local fleet ready", "dir", opts.Dir, "clusters", len(names), "elapsed", time.Since(fleet.startedAt).Round(time.Millisecond))
	return fleet, nil
}

// firstRealError prefers an error that explains a failure over the cancellations it caused in the others.
func firstRealError(errs []error) error {
	var canceled error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) {
			canceled = cmpOr(canceled, err)
			continue
		}
		return err
	}
	return canceled
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func (f *Fleet) adoptStarted(clusters []*Cluster) {
	for i, c := range clusters {
		if c == nil {
			continue
		}
		if i == 0 {
			f.ControlPlane = c
		} else {
			f.Workloads = append(f.Workloads, c)
		}
	}
}

func (o Options) withDefaults() (Options, error) {
	if o.Dir == "" {
		return o, errors.New("local fleet: Options.Dir is required")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return o, fmt.Errorf("local fleet: dir %q: %w", o.Dir, err)
	}
	o.Dir = dir
	if o.BinDir == "" {
		o.BinDir = "bin"
	}
	if o.BinDir, err = filepath.Abs(o.BinDir); err != nil {
		return o, fmt.Errorf("local fleet: bin dir: %w", err)
	}
	if err := CheckBinaries(o.BinDir); err != nil {
		return o, err
	}
	if o.RunPods {
		if err := CheckRunPodsBinaries(o.BinDir); err != nil {
			return o, err
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 10 * time.Second
	}
	seen := map[string]bool{ControlPlaneName: true}
	for i, name := range o.Clusters {
		if name == ControlPlaneName {
			return o, fmt.Errorf("local fleet: Clusters[%d]: %q is reserved for the control plane", i, name)
		}
		if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
			return o, fmt.Errorf("local fleet: Clusters[%d]: invalid cluster name %q: %s", i, name, strings.Join(msgs, "; "))
		}
		if seen[name] {
			return o, fmt.Errorf("local fleet: Clusters[%d]: duplicate cluster name %q", i, name)
		}
		seen[name] = true
	}
	return o, nil
}

// CheckBinaries reports whether binDir holds executable etcd and kube-apiserver binaries.
func CheckBinaries(binDir string) error {
	return checkBinaries(binDir, "tools", EtcdBinary, APIServerBinary)
}

// CheckRunPodsBinaries reports whether binDir holds the binaries that Options.RunPods needs besides those
// of CheckBinaries.
func CheckRunPodsBinaries(binDir string) error {
	return checkBinaries(binDir, "tools", RunPodsBinaries...)
}

func checkBinaries(binDir, task string, names ...string) error {
	var missing []string
	for _, name := range names {
		info, err := os.Stat(filepath.Join(binDir, name))
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			missing = append(missing, filepath.Join(binDir, name))
		}
	}
	if len(missing) > 0 {
		return &MissingBinariesError{Paths: missing, Task: task}
	}
	return nil
}

// MissingBinariesError says which fleet binaries are absent and how to build them.
type MissingBinariesError struct {
	Paths []string
	// Task is the `go tool task` task that builds them.
	Task string
}

func (e *MissingBinariesError) Error() string {
	return fmt.Sprintf("local fleet: missing %s: build them with `go tool task %s` (hack/build-tools.sh)",
		strings.Join(e.Paths, " and "), e.Task)
}

// prepareDir refuses a directory whose fleet is still running and clears what a stopped one left behind.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("local fleet: %w", err)
	}
	pids, err := readPIDFiles(dir)
	if err != nil {
		return fmt.Errorf("local fleet: %w", err)
	}
	for path, pid := range pids {
		if ProcessAlive(pid) && processBelongsTo(pid, dir) {
			return fmt.Errorf("local fleet: a fleet is already running in %s (pid %d from %s); stop it with `fleetflow fleet down --dir %s`",
				dir, pid, path, dir)
		}
	}
	// Clearing deletes files, so it only happens in an empty directory or one a fleet marked as its own.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("local fleet: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, markerFileName)); len(entries) > 0 && err != nil {
		return fmt.Errorf("local fleet: %s is not empty and holds no fleet (no %s); use an empty or new directory", dir, markerFileName)
	}
	for _, name := range []string{EtcdDataDirName, "auth", clustersDirName, StateFileName, "etcd.pid", "etcd.log"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("local fleet: clear %s: %w", dir, err)
		}
	}
	marker := "This directory belongs to a fleetflow local fleet; fleetflow fleet up may clear it.\n"
	if err := os.WriteFile(filepath.Join(dir, markerFileName), []byte(marker), 0o644); err != nil {
		return fmt.Errorf("local fleet: %w", err)
	}
	return os.MkdirAll(filepath.Join(dir, clustersDirName), 0o755)
}

func (f *Fleet) progress(component string, stage Stage, started time.Time, detail string) {
	p := Progress{Component: component, Stage: stage, Elapsed: time.Since(started), Detail: detail}
	f.opts.Logger.Debug("local fleet progress", "component", component, "stage", stage, "elapsed", p.Elapsed, "detail", detail)
	if f.opts.Progress != nil {
		f.opts.Progress(p)
	}
}

func (f *Fleet) startEtcd(ctx context.Context) error {
	dir := f.opts.Dir
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return fmt.Errorf("local fleet: etcd: %w", err)
		}
		clientURL := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		peerURL := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		started := time.Now()
		f.progress("etcd", StageStarting, started, clientURL)
		proc, err := startProcess(processSpec{
			name:   "etcd",
			binary: filepath.Join(f.opts.BinDir, EtcdBinary),
			args: []string{
				"--name=fleet",
				"--data-dir=" + filepath.Join(dir, EtcdDataDirName),
				"--listen-client-urls=" + clientURL,
				"--advertise-client-urls=" + clientURL,
				"--listen-peer-urls=" + peerURL,
				"--initial-advertise-peer-urls=" + peerURL,
				"--initial-cluster=fleet=" + peerURL,
				// A throwaway fleet does not need durability, and fsync on a shared disk slows every write.
				"--unsafe-no-fsync",
			},
			logPath: filepath.Join(dir, "etcd.log"),
			pidPath: filepath.Join(dir, "etcd.pid"),
			detach:  f.opts.Detach,
		})
		if err != nil {
			return fmt.Errorf("local fleet: %w", err)
		}
		f.etcd = proc
		client := &http.Client{Timeout: 2 * time.Second}
		err = f.waitReady(ctx, proc, "etcd", started, func(ctx context.Context) (bool, string) {
			return probe(ctx, client, clientURL+"/health", "", func(body string) bool {
				return strings.Contains(body, `"health":"true"`)
			})
		})
		if err == nil {
			f.EtcdURL = clientURL
			f.progress("etcd", StageReady, started, clientURL)
			return nil
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			return err
		}
		f.opts.Logger.Info("etcd port was taken, retrying with new ports", "attempt", attempt)
		_ = proc.stop(ctx, f.opts.StopGrace)
	}
	return lastErr
}

func (f *Fleet) startAPIServer(ctx context.Context, name string, record func(*Cluster)) (*Cluster, error) {
	auth := f.auth
	clusterDir := filepath.Join(f.opts.Dir, clustersDirName, name)
	caPEM, err := writeServingCert(filepath.Join(clusterDir, "certs"), name)
	if err != nil {
		return nil, fmt.Errorf("local fleet: %s: serving certificate: %w", name, err)
	}
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return nil, fmt.Errorf("local fleet: %s: %w", name, err)
		}
		cluster := &Cluster{
			Name:           name,
			Server:         fmt.Sprintf("https://127.0.0.1:%d", ports[0]),
			KubeconfigPath: filepath.Join(clusterDir, "kubeconfig"),
			EtcdPrefix:     "/" + name,
			LogPath:        filepath.Join(clusterDir, "apiserver.log"),
			Port:           ports[0],
			caPEM:          caPEM,
			token:          auth.token,
		}
		proc, err := f.launchAPIServer(ctx, cluster, func(proc *process) {
			cluster.proc, cluster.PID = proc, proc.pid
			record(cluster)
		})
		if err == nil {
			if err := writeKubeconfig(cluster.KubeconfigPath, name, cluster.Server, caPEM, auth.token); err != nil {
				return nil, fmt.Errorf("local fleet: %s: %w", name, err)
			}
			return cluster, nil
		}
		lastErr = err
		if !errors.Is(err, errPortInUse) {
			return nil, err
		}
		f.opts.Logger.Info("apiserver port was taken, retrying with a new port", "cluster", name, "attempt", attempt)
		_ = proc.stop(ctx, f.opts.StopGrace)
	}
	return nil, lastErr
}

// launchAPIServer starts the apiserver of cluster on its port with the serving certificate in its cluster
// directory, hands the process to started as soon as it runs, and waits until the apiserver is ready.
func (f *Fleet) launchAPIServer(ctx context.Context, cluster *Cluster, started func(*process)) (*process, error) {
	auth := f.auth
	clusterDir := filepath.Join(f.opts.Dir, clustersDirName, cluster.Name)
	certDir := filepath.Join(clusterDir, "certs")
	args := []string{
		"--etcd-servers=" + f.EtcdURL,
		"--etcd-prefix=" + cluster.EtcdPrefix,
		fmt.Sprintf("--secure-port=%d", cluster.Port),
		"--bind-address=127.0.0.1",
		"--cert-dir=" + certDir,
		"--token-auth-file=" + auth.tokenFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + auth.saPublicFile,
		"--service-account-signing-key-file=" + auth.saPrivateFile,
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller-manager creates service accounts, and no node lifecycle controller would ever
		// lift the not-ready taint TaintNodesByCondition puts on seeded nodes.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	}
	args = append(args, f.opts.ExtraAPIServerArgs...)
	startedAt := time.Now()
	f.progress(cluster.Name, StageStarting, startedAt, cluster.Server)
	proc, err := startProcess(processSpec{
		name:    "apiserver " + cluster.Name,
		binary:  filepath.Join(f.opts.BinDir, APIServerBinary),
		args:    args,
		logPath: cluster.LogPath,
		pidPath: filepath.Join(clusterDir, "apiserver.pid"),
		detach:  f.opts.Detach,
	})
	if err != nil {
		return nil, fmt.Errorf("local fleet: %w", err)
	}
	started(proc)
	client, err := readyzClient(cluster.caPEM)
	if err != nil {
		return proc, fmt.Errorf("local fleet: %s: %w", cluster.Name, err)
	}
	err = f.waitReady(ctx, proc, cluster.Name, startedAt, func(ctx context.Context) (bool, string) {
		return probe(ctx, client, cluster.Server+"/readyz", auth.token, func(body string) bool { return body == "ok" })
	})
	if err != nil {
		return proc, err
	}
	f.progress(cluster.Name, StageReady, startedAt, cluster.Server)
	return proc, nil
}

var errPortInUse = errors.New("port already in use")

// waitReady polls the readiness probe until it passes, the process exits, or ctx ends. A failure carries
// the last lines of the process's log, because that is where the reason is.
func (f *Fleet) waitReady(ctx context.Context, proc *process, component string, started time.Time, ready func(context.Context) (bool, string)) error {
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	report := time.NewTicker(2 * time.Second)
	defer report.Stop()
	for {
		ok, detail := ready(ctx)
		if ok {
			return nil
		}
		select {
		case <-proc.exited:
			tail := tailFile(proc.logPath, logTailLines)
			err := fmt.Errorf("local fleet: %s exited (%s) before becoming ready; last lines of %s:\n%s",
				proc.name, exitDescription(proc.waitErr), proc.logPath, tail)
			if strings.Contains(tail, "address already in use") {
				return fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("local fleet: %s not ready after %s (%w), last answer %q; last lines of %s:\n%s",
				proc.name, time.Since(started).Round(time.Second), ctx.Err(), detail, proc.logPath, tailFile(proc.logPath, logTailLines))
		case <-report.C:
			f.progress(component, StageWaiting, started, detail)
		case <-poll.C:
		}
	}
}

func readyzClient(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("serving certificate is not valid PEM")
	}
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// probe GETs url and reports whether the answer is 200 with a body accepted by ok, and a short description.
func probe(ctx context.Context, client *http.Client, url, token string, ok func(string) bool) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, shortError(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	text := strings.TrimSpace(string(body))
	if resp.StatusCode == http.StatusOK && ok(text) {
		return true, text
	}
	return false, fmt.Sprintf("HTTP %d, %s", resp.StatusCode, failingChecks(text))
}

// failingChecks picks the failed checks out of a verbose /readyz answer.
func failingChecks(body string) string {
	var failed []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.Fields(strings.TrimPrefix(line, "[-]"))[0])
		}
	}
	switch {
	case len(failed) > 3:
		return fmt.Sprintf("%d checks failing: %s, ...", len(failed), strings.Join(failed[:3], ", "))
	case len(failed) > 0:
		return "failing: " + strings.Join(failed, ", ")
	}
	if len(body) > 200 {
		body = body[:200] + "..."
	}
	return body
}

func shortError(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr.Err.Error()
	}
	return err.Error()
}

// freePorts asks the kernel for n free loopback ports. They are released before the process binds them,
// so another process may grab one in between; Start retries with new ports when a bind fails.
func freePorts(n int) ([]int, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// watchExits closes Exited when a process ends before Stop.
func (f *Fleet) watchExits() {
	procs := []*process{f.etcd}
	for _, c := range f.Clusters() {
		procs = append(procs, c.proc)
	}
	procs = append(procs, f.componentProcesses()...)
	for _, p := range procs {
		f.watchExit(p)
	}
}

func (f *Fleet) watchExit(p *process) {
	go func() {
		select {
		case <-p.exited:
		case <-f.stopping:
			return
		}
		select {
		case <-f.stopping:
			return // exited because of Stop
		default:
		}
		if p.stopRequested.Load() {
			return // stopped by StopCluster
		}
		f.exitOnce.Do(func() {
			f.exitErr = fmt.Errorf("local fleet: %s (pid %d) exited unexpectedly (%s); last lines of %s:\n%s",
				p.name, p.pid, exitDescription(p.waitErr), p.logPath, tailFile(p.logPath, logTailLines))
			close(f.exited)
		})
	}()
}

// StopCluster stops one cluster's apiserver, as an outage would take it down, and leaves the rest of the
// fleet running (the cluster's components too, if any, which retry until the apiserver is back): SIGTERM,
// then SIGKILL after Options.StopGrace or when ctx ends. Its exit is not reported through Exited, and Stop
// later skips it. Stopping a stopped cluster does nothing.
func (f *Fleet) StopCluster(ctx context.Context, name string) error {
	c, ok := f.Cluster(name)
	if !ok {
		return fmt.Errorf("local fleet: stop cluster %q: no such cluster in %s", name, f.Dir)
	}
	if c.proc == nil {
		return fmt.Errorf("local fleet: stop cluster %q: its apiserver was not started by this process", name)
	}
	c.proc.stopRequested.Store(true)
	if err := c.proc.stop(ctx, f.opts.StopGrace); err != nil {
		return fmt.Errorf("local fleet: stop cluster %q: %w", name, err)
	}
	return nil
}

// KillCluster stops one cluster's apiserver with SIGKILL, as a crash would, and waits until it is gone. Like
// StopCluster, its exit is not reported through Exited, and StartCluster brings it back.
func (f *Fleet) KillCluster(name string) error {
	c, ok := f.Cluster(name)
	if !ok {
		return fmt.Errorf("local fleet: kill cluster %q: no such cluster in %s", name, f.Dir)
	}
	if c.proc == nil {
		return fmt.Errorf("local fleet: kill cluster %q: its apiserver was not started by this process", name)
	}
	c.proc.stopRequested.Store(true)
	if err := c.proc.kill(); err != nil {
		return fmt.Errorf("local fleet: kill cluster %q: %w", name, err)
	}
	return nil
}

// StartCluster starts again the apiserver of a cluster that StopCluster stopped, as a cluster comes back after
// an outage: on the same port, with the same serving certificate and the same data, so every client of the
// cluster reaches it as before. It returns once the apiserver is ready.
func (f *Fleet) StartCluster(ctx context.Context, name string) error {
	c, ok := f.Cluster(name)
	if !ok {
		return fmt.Errorf("local fleet: start cluster %q: no such cluster in %s", name, f.Dir)
	}
	if c.proc == nil || !c.proc.stopRequested.Load() {
		return fmt.Errorf("local fleet: start cluster %q: it was not stopped by StopCluster", name)
	}
	select {
	case <-c.proc.exited:
	default:
		return fmt.Errorf("local fleet: start cluster %q: its apiserver (pid %d) is still running", name, c.PID)
	}
	var proc *process
	_, err := f.launchAPIServer(ctx, c, func(p *process) { proc = p })
	if proc != nil {
		c.proc, c.PID = proc, proc.pid
		f.watchExit(proc)
	}
	if err != nil {
		return fmt.Errorf("local fleet: start cluster %q again: %w", name, err)
	}
	return writeState(f)
}

// Stop stops every process of the fleet, components first, then apiservers and etcd last, each with SIGTERM
// and, after Options.StopGrace or when ctx ends, SIGKILL. It waits until all are gone and removes their pid files and
// the state file. It is safe to call more than once.
func (f *Fleet) Stop(ctx context.Context) error {
	f.stopOnce.Do(func() {
		close(f.stopping)
		var apiservers []*process
		for _, c := range f.Clusters() {
			if c.proc != nil {
				apiservers = append(apiservers, c.proc)
			}
		}
		// Components before their apiservers, so none of them spends its last seconds failing to reach one.
		errs := stopAll(ctx, f.componentProcesses(), f.opts.StopGrace)
		errs = append(errs, stopAll(ctx, apiservers, f.opts.StopGrace)...)
		if f.etcd != nil {
			errs = append(errs, f.etcd.stop(ctx, f.opts.StopGrace))
		}
		if err := os.Remove(filepath.Join(f.Dir, StateFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		f.stopErr = errors.Join(errs...)
		f.opts.Logger.Info("local fleet stopped", "dir", f.Dir)
	})
	return f.stopErr
}

// stopAll stops procs in parallel and returns their errors.
func stopAll(ctx context.Context, procs []*process, grace time.Duration) []error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.stop(ctx, grace) })
	}
	wg.Wait()
	return errs
}

// exitDescription says how a process ended; its log tail, not this error, carries the reason.
func exitDescription(waitErr error) string {
	if waitErr == nil {
		return "exit status 0"
	}
	return waitErr.Error()
}
