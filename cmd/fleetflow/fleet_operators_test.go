package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

func TestFleetUpRejectsOperators(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "unknown", args: []string{"--operators", "kuberay-typo"}, want: []string{`"kuberay-typo"`, "known: " + strings.Join(localfleet.OperatorNames(), ", ")}},
		{name: "missing binary", args: []string{"--operators", "training-operator"}, want: []string{"training-operator", "go tool task tools"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"up", "--dir", t.TempDir(), "--bin-dir", t.TempDir(), "--clusters", "1"}, tt.args...)
			err := runFleetCommand(t, args...)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("got %v, want an error mentioning %s", err, want)
				}
			}
		})
	}
}

// TestFleetUpOperatorsDetached: fleet up --detach --operators leaves, per workload cluster, a process that
// waits for the operator's CRDs (fleet status: waiting for CRDs), which becomes the operator once they are
// served (running, same pid); fleet down stops it with the rest.
func TestFleetUpOperatorsDetached(t *testing.T) {
	binDir := localfleettest.RequireOperators(t, "training-operator")
	unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	// The runner is this test binary, which runs fleetflow's main with this variable set (TestMain).
	t.Setenv(runAsFleetflow, "1")
	dir := t.TempDir()
	t.Cleanup(func() { _, _ = localfleet.Down(context.Background(), dir, time.Second) })
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(fleetFile, []byte("clusters:\n- name: east\n  nodes: [{name: gpu, allocatable: {cpu: \"8\", memory: 32Gi}}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	up := newFleetCommand()
	up.SetOut(&bytes.Buffer{})
	up.SetErr(&bytes.Buffer{})
	up.SetArgs([]string{"up", "--fleet", fleetFile, "--dir", dir, "--bin-dir", binDir, "--detach", "--register=false",
		"--operators", "training-operator"})
	if err := up.Execute(); err != nil {
		t.Fatalf("fleet up: %v", err)
	}
	state, err := localfleet.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	var east localfleet.ClusterState
	for _, c := range state.Clusters {
		if c.Name == "east" {
			east = c
		}
	}
	var op localfleet.ComponentState
	for _, c := range east.Components {
		if c.Operator {
			op = c
		}
	}
	if op.Name != "training-operator" || len(east.Components) != 4 {
		t.Fatalf("components of east: %+v, want the three RunPods ones and training-operator", east.Components)
	}
	status := func() string {
		var out bytes.Buffer
		cmd := newFleetCommand()
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"status", "--dir", dir})
		if err := cmd.Execute(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if out := status(); !strings.Contains(out, "training-operator") || !strings.Contains(out, localfleet.OperatorWaitingCRDs) {
		t.Errorf("fleet status before the CRDs:\n%s", out)
	}

	cfg, err := kube.LoadConfig(kube.KubeconfigRef{Path: east.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := frameworkcrds.Objects("pytorchjobs.yaml", "mpijobs-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := clients.Apply(t.Context(), "fleetflow-test", crds...); err != nil {
		t.Fatal(err)
	}
	// The runner execs the operator once it sees the CRDs; its executable is the only sign of that.
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for localfleet.OperatorProcessState(op) != localfleet.OperatorRunning {
		if time.Now().After(deadline) {
			t.Fatalf("training-operator not running 2 minutes after its CRDs; log:\n%s", readFile(op.LogPath))
		}
		if !localfleet.ProcessAlive(op.PID) {
			t.Fatalf("training-operator (pid %d) exited; log:\n%s", op.PID, readFile(op.LogPath))
		}
		<-tick.C
	}
	if out := status(); !strings.Contains(out, localfleet.OperatorRunning) {
		t.Errorf("fleet status after the CRDs:\n%s", out)
	}

	stopped, err := localfleet.Down(context.Background(), dir, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pid := range stopped {
		found = found || pid == op.PID
	}
	if !found || localfleet.ProcessAlive(op.PID) {
		t.Errorf("fleet down stopped %v, want the operator's pid %d among them and gone", stopped, op.PID)
	}
}

func readFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return string(data)
}
