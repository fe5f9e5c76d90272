package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/chaos"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

// TestChaosShortRun is the short, seeded chaos run of `go tool task test`: three minutes of workloads
// submitted and deleted while parts, NATS nodes and apiservers are killed with SIGKILL, then every check of
// fleetflow chaos. The long run is `go tool task chaos`.
func TestChaosShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fleet, a NATS cluster and ten parts for about five minutes")
	}
	binDir := localfleettest.RequireBinaries(t)
	root := filepath.Join("..", "..")
	// The parts' logs outlive a failed run, for CI to show.
	dir, err := os.MkdirTemp("", "fleetflow-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(dir)
		}
	})
	o := chaosOptions{dir: dir, fleetFile: filepath.Join(root, "deploy/fleets/demo.yaml"),
		crds: filepath.Join(root, "deploy/demo/crds.yaml"), policies: filepath.Join(root, "deploy/demo/policies.yaml"),
		binDir: binDir, binary: os.Args[0], env: []string{runAsFleetflow + "=1"},
		run: chaos.Options{Seed: 20261200, Duration: 3 * time.Minute, Converge: 3 * time.Minute,
			Load:   chaos.LoadOptions{Workloads: 150, DeleteShare: 0.2, GPUShare: 0.15},
			Faults: chaos.FaultOptions{Gap: 6 * time.Second, MaxDown: 8 * time.Second}}}
	var out, progress bytes.Buffer
	err = runChaos(t.Context(), o, &out, &progress)
	t.Logf("report:\n%s", out.String())
	if err != nil {
		t.Fatalf("%v\n%s\nlogs in %s", err, progress.String(), o.dir)
	}
	// A run that killed little proves little. This seed's first kill is a placer's, and every kind of target
	// is among its first 14; a kill takes about 12 s here, so 3 minutes make room for well over 5.
	m := regexp.MustCompile(`(?m)^kills +(\d+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the report says nothing of kills")
	}
	if kills, _ := strconv.Atoi(m[1]); kills < 5 {
		t.Errorf("%d kills in %s, want at least 5", kills, o.run.Duration)
	}
	if !regexp.MustCompile(`(?m)^  placer +\d+$`).MatchString(out.String()) {
		t.Errorf("no placer killed; seed %d kills one first", o.run.Seed)
	}
}

// TestChaosNamesCRDsWithoutPyTorchJobs: a --crds file that does not install the kind the run submits is
// refused before any fault, naming the flag and the kind, instead of retrying submissions until the end.
func TestChaosNamesCRDsWithoutPyTorchJobs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local fleet")
	}
	binDir := localfleettest.RequireBinaries(t)
	root := filepath.Join("..", "..")
	crds := filepath.Join(t.TempDir(), "no-crds.yaml")
	if err := os.WriteFile(crds, []byte("# no CRD here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := chaosOptions{dir: t.TempDir(), fleetFile: filepath.Join(root, "deploy/fleets/demo.yaml"), crds: crds,
		policies: filepath.Join(root, "deploy/demo/policies.yaml"), binDir: binDir, binary: os.Args[0],
		env: []string{runAsFleetflow + "=1"}, run: chaos.Options{Seed: 1, Duration: time.Minute, Converge: time.Minute,
			Load: chaos.LoadOptions{Workloads: 1}, Faults: chaos.FaultOptions{Gap: time.Second, MaxDown: time.Second}}}
	var out, progress bytes.Buffer
	err := runChaos(t.Context(), o, &out, &progress)
	if err == nil || !strings.Contains(err.Error(), "--crds "+crds) || !strings.Contains(err.Error(), "kubeflow.org/v1") {
		t.Errorf("runChaos = %v, want an error naming --crds %s and kubeflow.org/v1", err, crds)
	}
}
