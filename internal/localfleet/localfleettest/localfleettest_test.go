package localfleettest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetflow/fleetflow/internal/localfleet"
)

// The package's own fleet is just the control plane: one apiserver is enough to prove Run works, and Run
// itself fails the package if any fleet process outlives Stop.
func TestMain(m *testing.M) { os.Exit(Run(m)) }

func TestFleetServesTheControlPlane(t *testing.T) {
	fleet := Fleet(t)
	if len(fleet.Workloads) != 0 || fleet.ControlPlane.Name != localfleet.ControlPlaneName {
		t.Fatalf("fleet: control plane %q and %d workload clusters, want only the control plane", fleet.ControlPlane.Name, len(fleet.Workloads))
	}
	client := kubernetes.NewForConfigOrDie(fleet.ControlPlane.RESTConfig())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	for _, pid := range fleet.PIDs() {
		if !localfleet.ProcessAlive(pid) {
			t.Errorf("fleet pid %d not alive during the tests", pid)
		}
	}
}

func TestMissingBinariesDecision(t *testing.T) {
	missing := &localfleet.MissingBinariesError{Paths: []string{"bin/etcd"}}
	tests := []struct {
		ci       string
		wantFail bool
	}{
		{"", false},
		{"false", false},
		{"0", false},
		{"true", true},
		{"1", true},
	}
	for _, tt := range tests {
		decision := missingBinaries(missing, tt.ci)
		if decision.fail != tt.wantFail {
			t.Errorf("CI=%q: fail=%v, want %v", tt.ci, decision.fail, tt.wantFail)
		}
		if !strings.Contains(decision.message, "bin/etcd") {
			t.Errorf("CI=%q: message %q does not name the missing binary", tt.ci, decision.message)
		}
	}
}

func TestRepoRoot(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	// This package lives at internal/localfleet/localfleettest below the root.
	wd, _ := os.Getwd()
	if want := filepath.Join(root, "internal", "localfleet", "localfleettest"); wd != want {
		t.Errorf("RepoRoot %s: working dir %s is not %s", root, wd, want)
	}
}

func TestLockWaitsForTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlockFirst, err := lockAt(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	acquired := make(chan func(), 1)
	errs := make(chan error, 1)
	go func() {
		unlock, err := lockAt(path, func(string) { close(waited) })
		if err != nil {
			errs <- err
			return
		}
		acquired <- unlock
	}()
	select {
	case <-waited:
	case err := <-errs:
		t.Fatal(err)
	case <-acquired:
		t.Fatal("second Lock acquired while the first was held")
	}
	unlockFirst()
	unlockFirst() // releasing twice is harmless
	select {
	case unlock := <-acquired:
		unlock()
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal(errors.New("second Lock not acquired after the first was released"))
	}
}
