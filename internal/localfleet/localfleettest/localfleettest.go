package localfleettest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/localfleet"
)

// Option configures Run.
type Option func(*config)

type config struct {
	clusters  []string
	fleetFile string
	binDir    string
	options   func(*localfleet.Options)
	operators []string
	stderr    io.Writer
}

// WithClusters names the workload clusters; without it (and without WithFleetFile) the fleet has only the
// control plane.
func WithClusters(names ...string) Option { return func(c *config) { c.clusters = names } }

// WithFleetFile seeds the fleet from a fleet description; its clusters become the workload clusters unless
// WithClusters names them.
func WithFleetFile(path string) Option { return func(c *config) { c.fleetFile = path } }

// WithBinDir sets where etcd and kube-apiserver are; default $FLEETFLOW_BIN_DIR, else bin/ at the
// repository root.
func WithBinDir(dir string) Option { return func(c *config) { c.binDir = dir } }

// WithOptions adjusts the localfleet options right before Start.
func WithOptions(adjust func(*localfleet.Options)) Option {
	return func(c *config) { c.options = adjust }
}

// WithOperators runs the fleet with Options.RunPods and starts the named framework operators in every
// workload cluster as soon as their CRDs are served there (Fleet.StartOperators, in the background, for as
// long as the tests run): the tests' pipeline copies the CRDs. Their binaries missing skip the tests, or
// fail them with CI=true, as the fleet's own do.
func WithOperators(names ...string) Option {
	return func(c *config) { c.operators = names }
}

var (
	mu         sync.Mutex
	current    *localfleet.Fleet
	skipReason string
)

// Fleet returns the package's fleet. It skips the test when Run skipped starting it, and fails the test
// when Run was not used.
func Fleet(tb testing.TB) *localfleet.Fleet {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if current != nil {
		return current
	}
	if skipReason != "" {
		tb.Skip(skipReason)
	}
	tb.Fatal("localfleettest: no fleet; call localfleettest.Run from TestMain")
	return nil
}

// Run starts the fleet, runs the package's tests, stops the fleet and checks that none of its processes
// survived. It returns the exit code for os.Exit.
//
// In -short mode, and when the binaries are missing, the fleet's tests are skipped with a message saying
// why; missing binaries with CI=true are a failure instead. Only one fleet started by Run (or Lock) runs at a time on a
// machine, so packages tested in parallel do not multiply apiservers.
func Run(m *testing.M, opts ...Option) int {
	cfg := config{stderr: os.Stderr}
	for _, opt := range opts {
		opt(&cfg)
	}
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.stderr, "localfleettest: "+format+"\n", args...) }

	if !flag.Parsed() {
		flag.Parse() // testing.Short needs the test flags
	}
	if testing.Short() {
		setFleet(nil, shortSkipMessage)
		return m.Run()
	}

	binDir, err := resolveBinDir(cfg.binDir)
	if err == nil {
		err = localfleet.CheckBinaries(binDir)
	}
	if err == nil && len(cfg.operators) > 0 {
		if err = localfleet.CheckRunPodsBinaries(binDir); err == nil {
			err = localfleet.CheckOperatorBinaries(binDir, cfg.operators...)
		}
	}
	if err != nil {
		if decision := missingBinaries(err, os.Getenv("CI")); decision.fail {
			logf("FAIL: %s", decision.message)
			return 1
		} else {
			logf("%s", decision.message)
			setFleet(nil, decision.message)
			return m.Run()
		}
	}

	var spec *fleetspec.Fleet
	clusters := cfg.clusters
	if cfg.fleetFile != "" {
		data, err := os.ReadFile(cfg.fleetFile)
		if err != nil {
			logf("FAIL: %v", err)
			return 1
		}
		if spec, err = fleetspec.Parse(data, cfg.fleetFile); err != nil {
			logf("FAIL: %v", err)
			return 1
		}
		if clusters == nil {
			for _, c := range spec.Clusters {
				clusters = append(clusters, c.Name)
			}
		}
	}

	unlock, err := Lock(func(path string) { logf("waiting for another package's fleet to finish (lock %s)", path) })
	if err != nil {
		logf("FAIL: %v", err)
		return 1
	}
	defer unlock()

	dir, err := os.MkdirTemp("", "fleetflow-fleet-")
	if err != nil {
		logf("FAIL: %v", err)
		return 1
	}
	options := localfleet.Options{
		Dir:      dir,
		Clusters: clusters,
		BinDir:   binDir,
		Logger:   slog.New(slog.NewTextHandler(cfg.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	options.RunPods = options.RunPods || len(cfg.operators) > 0
	if cfg.options != nil {
		cfg.options(&options)
	}

	// A signal during startup or tests stops the fleet before the binary exits.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	var fleetMu sync.Mutex
	var fleet *localfleet.Fleet
	stop := sync.OnceValue(func() error {
		fleetMu.Lock()
		defer fleetMu.Unlock()
		if fleet == nil {
			return nil
		}
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return fleet.Stop(stopCtx)
	})
	startDone := make(chan struct{})
	go func() {
		select {
		case sig := <-signals:
			logf("%v: stopping the fleet in %s", sig, dir)
			cancel()
			<-startDone // a Start cut short stops what it started before returning
			_ = stop()
			unlock()
			os.Exit(2)
		case <-ctx.Done():
		}
	}()

	started := time.Now()
	f, err := localfleet.Start(ctx, options)
	if err == nil {
		fleetMu.Lock()
		fleet = f
		fleetMu.Unlock()
	}
	close(startDone)
	if err != nil {
		keepLogsOnly(dir)
		logf("FAIL: %v\n(fleet logs kept in %s)", err, dir)
		return 1
	}
	if spec != nil {
		if err := localfleet.Seed(ctx, f, spec); err != nil {
			logf("FAIL: %v", err)
			_ = stop()
			return 1
		}
	}
	logf("fleet of %d clusters ready in %s (%s)", len(f.Clusters()), time.Since(started).Round(100*time.Millisecond), dir)
	setFleet(f, "")
	var operatorsDone sync.WaitGroup
	stopOperators := func() {}
	if len(cfg.operators) > 0 {
		// Until the tests end: an operator starts whenever a test's pipeline has copied its CRDs.
		opCtx, cancelOperators := context.WithCancel(ctx)
		stopOperators = func() { cancelOperators(); operatorsDone.Wait() }
		for _, c := range f.Workloads {
			operatorsDone.Go(func() {
				if err := f.StartOperators(opCtx, c.Name, cfg.operators...); err != nil && opCtx.Err() == nil {
					logf("starting operators in %s: %v", c.Name, err)
				}
			})
		}
	}

	code := runRecovering(m, stop)
	stopOperators() // before Stop, so that none starts while the fleet stops

	setFleet(nil, "fleet already stopped")
	if err := stop(); err != nil {
		logf("FAIL: stop: %v", err)
		code = 1
	}
	if alive := alivePIDs(f.PIDs()); len(alive) > 0 {
		logf("FAIL: fleet processes still alive after Stop: %v", alive)
		code = 1
	}
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		keepLogsOnly(dir)
		logf("fleet logs kept in %s", dir)
	}
	return code
}

// runRecovering runs the tests, stopping the fleet before a panic in m.Run propagates.
func runRecovering(m *testing.M, stop func() error) int {
	defer func() {
		if r := recover(); r != nil {
			_ = stop()
			panic(r)
		}
	}()
	return m.Run()
}

// keepLogsOnly drops etcd's data (over 100 MB of preallocated WAL) from a failed run's directory; the logs
// are what explains the failure.
func keepLogsOnly(dir string) { _ = os.RemoveAll(filepath.Join(dir, localfleet.EtcdDataDirName)) }

func setFleet(f *localfleet.Fleet, reason string) {
	mu.Lock()
	defer mu.Unlock()
	current, skipReason = f, reason
}

func alivePIDs(pids []int) []int {
	var alive []int
	for _, pid := range pids {
		if localfleet.ProcessAlive(pid) {
			alive = append(alive, pid)
		}
	}
	return alive
}

type missingDecision struct {
	fail    bool
	message string
}

// missingBinaries decides what absent binaries mean: on a developer machine the fleet's tests are skipped,
// on CI (CI=true, as CI systems set it) they must not silently pass.
func missingBinaries(err error, ciEnv string) missingDecision {
	if isCI(ciEnv) {
		return missingDecision{fail: true, message: fmt.Sprintf("%v (CI=%s: the fleet's tests cannot be skipped on CI)", err, ciEnv)}
	}
	return missingDecision{message: fmt.Sprintf("skipping tests that need the local fleet: %v", err)}
}

func isCI(value string) bool {
	switch strings.ToLower(value) {
	case "", "0", "false", "no":
		return false
	}
	return true
}

// resolveBinDir picks the bin directory: explicit, $FLEETFLOW_BIN_DIR, or bin/ at the repository root
// found by walking up from the working directory (a test runs in its package directory).
func resolveBinDir(explicit string) (string, error) {
	if explicit != "" {
		return filepath.Abs(explicit)
	}
	if env := os.Getenv("FLEETFLOW_BIN_DIR"); env != "" {
		return filepath.Abs(env)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// RepoRoot returns the directory of fleetflow's go.mod, walking up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(data)), "module github.com/fleetflow/fleetflow\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("localfleettest: no fleetflow go.mod above the working directory; set FLEETFLOW_BIN_DIR")
		}
		dir = parent
	}
}

const shortSkipMessage = "skipping tests that need the local fleet in -short mode"

// RequireBinaries returns the bin directory for a test that starts its own fleet. It skips the test in
// -short mode or when the binaries are missing, but fails it when they are missing and CI=true.
func RequireBinaries(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip(shortSkipMessage)
	}
	binDir, err := resolveBinDir("")
	if err == nil {
		err = localfleet.CheckBinaries(binDir)
	}
	if err != nil {
		decision := missingBinaries(err, os.Getenv("CI"))
		if decision.fail {
			tb.Fatal(decision.message)
		}
		tb.Skip(decision.message)
	}
	return binDir
}

// RequireRunPods returns the bin directory for a test that starts a fleet with Options.RunPods. Like
// RequireBinaries, it skips the test when kube-scheduler, kube-controller-manager or kwok is missing, or fails
// it when CI=true.
func RequireRunPods(tb testing.TB) string {
	tb.Helper()
	binDir := RequireBinaries(tb)
	if err := localfleet.CheckRunPodsBinaries(binDir); err != nil {
		decision := missingBinaries(err, os.Getenv("CI"))
		if decision.fail {
			tb.Fatal(decision.message)
		}
		tb.Skip(decision.message)
	}
	return binDir
}

// RequireTool returns the path of a tool that hack/build-tools.sh builds into the bin directory besides the
// fleet's binaries, such as helm. Like RequireBinaries, it skips the test when the tool is missing, or fails
// it when CI=true.
func RequireTool(tb testing.TB, name string) string {
	tb.Helper()
	path := filepath.Join(RequireBinaries(tb), name)
	if _, err := os.Stat(path); err != nil {
		decision := missingBinaries(fmt.Errorf("%s (go tool task tools builds it): %w", name, err), os.Getenv("CI"))
		if decision.fail {
			tb.Fatal(decision.message)
		}
		tb.Skip(decision.message)
	}
	return path
}

// RequireOperators returns the bin directory for a test that starts a fleet with Options.RunPods and the
// named framework operators (Fleet.StartOperators). Like RequireRunPods, it skips the test when a binary is
// missing, or fails it when CI=true; an operator the local fleet does not know always fails it.
func RequireOperators(tb testing.TB, names ...string) string {
	tb.Helper()
	binDir := RequireRunPods(tb)
	for _, name := range names {
		if _, err := localfleet.LookupOperator(name); err != nil {
			tb.Fatal(err)
		}
	}
	if err := localfleet.CheckOperatorBinaries(binDir, names...); err != nil {
		decision := missingBinaries(err, os.Getenv("CI"))
		if decision.fail {
			tb.Fatal(decision.message)
		}
		tb.Skip(decision.message)
	}
	return binDir
}
