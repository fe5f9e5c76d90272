package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natsauth"
)

// These tests stop before any process starts; the real fleet is covered by internal/localfleet's tests.

func TestFleetUpRejectsClusterCountThatDisagreesWithTheFleetFile(t *testing.T) {
	// deploy/fleets/demo.yaml describes three clusters.
	err := runFleetCommand(t, "up", "--dir", t.TempDir(), "--fleet", "../../deploy/fleets/demo.yaml", "--clusters", "2")
	if err == nil || !strings.Contains(err.Error(), "--clusters 2 disagrees") {
		t.Errorf("got %v, want a disagreement error", err)
	}
}

func TestFleetUpRejectsAClusterNamedAsTheControlPlane(t *testing.T) {
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	spec := "clusters:\n- name: gpu\n  nodes: [{name: g, count: 1, allocatable: {cpu: \"8\", memory: 32Gi}}]\n" +
		"- name: " + localfleet.ControlPlaneName + "\n  nodes: [{name: c, count: 1, allocatable: {cpu: \"8\", memory: 32Gi}}]\n"
	if err := os.WriteFile(fleetFile, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	err := runFleetCommand(t, "up", "--dir", t.TempDir(), "--fleet", fleetFile)
	want := fmt.Sprintf("clusters[1].name: %q is reserved", localfleet.ControlPlaneName)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fleetFile) {
		t.Errorf("got %v, want the file and %q", err, want)
	}
}

func TestFleetUpReportsMissingBinaries(t *testing.T) {
	err := runFleetCommand(t, "up", "--dir", t.TempDir(), "--bin-dir", t.TempDir(), "--clusters", "1")
	if err == nil || !strings.Contains(err.Error(), "go tool task tools") {
		t.Errorf("got %v, want the missing binaries and how to build them", err)
	}
}

func TestFleetDownWithoutFleet(t *testing.T) {
	var out bytes.Buffer
	cmd := newFleetCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"down", "--dir", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no running fleet processes") {
		t.Errorf("output %q", out.String())
	}
}

func runFleetCommand(t *testing.T, args ...string) error {
	t.Helper()
	cmd := newFleetCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	return cmd.Execute()
}

// TestFleetUpDetachThenDown runs the commands the way a user does: up --detach leaves a control plane
// running (one apiserver, the smallest fleet), and down stops it by its pid files.
func TestFleetUpDetachThenDown(t *testing.T) {
	binDir := localfleettest.RequireBinaries(t)
	unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	dir := t.TempDir()
	t.Cleanup(func() { _, _ = localfleet.Down(context.Background(), dir, time.Second) })

	var out bytes.Buffer
	up := newFleetCommand()
	up.SetOut(&out)
	up.SetErr(&bytes.Buffer{})
	up.SetArgs([]string{"up", "--clusters", "0", "--dir", dir, "--bin-dir", binDir, "--detach"})
	if err := up.Execute(); err != nil {
		t.Fatalf("fleet up: %v", err)
	}
	state, err := localfleet.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Clusters) != 1 || !strings.Contains(out.String(), state.Clusters[0].Kubeconfig) {
		t.Fatalf("fleet up printed %q for state %+v, want the control plane's kubeconfig", out.String(), state)
	}
	if _, err := natsauth.LoadDir(filepath.Join(dir, "nats-users")); err != nil {
		t.Errorf("fleet up left no NATS users for fleetflow's parts: %v", err)
	}
	pids := []int{state.Etcd.PID, state.Clusters[0].PID}
	for _, pid := range pids {
		if !localfleet.ProcessAlive(pid) {
			t.Fatalf("pid %d not running after up --detach", pid)
		}
	}

	out.Reset()
	down := newFleetCommand()
	down.SetOut(&out)
	down.SetArgs([]string{"down", "--dir", dir})
	if err := down.Execute(); err != nil {
		t.Fatalf("fleet down: %v", err)
	}
	if !strings.Contains(out.String(), "stopped 2 fleet processes") {
		t.Errorf("fleet down printed %q", out.String())
	}
	for _, pid := range pids {
		if localfleet.ProcessAlive(pid) {
			t.Errorf("pid %d still running after down", pid)
		}
	}
}

// TestFleetUpRegistersTheFleetFilesClusters: with a fleet file, up registers each workload cluster on the
// control plane with the file's labels and taints (policies written against them select the clusters, and
// `fleetflow run` needs no --cluster); --register=false leaves the control plane bare.
func TestFleetUpRegistersTheFleetFilesClusters(t *testing.T) {
	binDir := localfleettest.RequireBinaries(t)
	unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	fleetFile := filepath.Join(t.TempDir(), "fleet.yaml")
	const spec = `clusters:
- name: gpu-east
  labels: {fleetflow.io/accelerator: h100, region: east}
  taints: [{key: maintenance, value: "true", effect: NoSchedule}]
  nodes: [{name: gpu, allocatable: {cpu: "8", memory: 32Gi}}]
`
	if err := os.WriteFile(fleetFile, []byte(spec), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, register := range []bool{true, false} {
		t.Run(fmt.Sprintf("register=%v", register), func(t *testing.T) {
			dir := t.TempDir()
			t.Cleanup(func() { _, _ = localfleet.Down(context.Background(), dir, time.Second) })
			up := newFleetCommand()
			up.SetOut(&bytes.Buffer{})
			up.SetErr(&bytes.Buffer{})
			up.SetArgs([]string{"up", "--fleet", fleetFile, "--dir", dir, "--bin-dir", binDir, "--detach",
				fmt.Sprintf("--register=%v", register)})
			if err := up.Execute(); err != nil {
				t.Fatalf("fleet up: %v", err)
			}
			state, err := localfleet.ReadState(dir)
			if err != nil {
				t.Fatal(err)
			}
			var kubeconfig string
			for _, c := range state.Clusters {
				if c.Role == localfleet.RoleControlPlane {
					kubeconfig = c.Kubeconfig
				}
			}
			cfg, err := kube.LoadConfig(kube.KubeconfigRef{Path: kubeconfig})
			if err != nil {
				t.Fatal(err)
			}
			controlPlane, err := kube.NewClients(cfg)
			if err != nil {
				t.Fatal(err)
			}
			clusters := controlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"})
			cluster, err := clusters.Get(t.Context(), "gpu-east", metav1.GetOptions{})
			if !register {
				if err == nil {
					t.Errorf("--register=false registered %s", cluster.GetName())
				}
				return
			}
			if err != nil {
				t.Fatalf("the Cluster gpu-east: %v", err)
			}
			if l := cluster.GetLabels(); l["fleetflow.io/accelerator"] != "h100" || l["region"] != "east" {
				t.Errorf("Cluster labels = %v, want the fleet file's", l)
			}
			taints, _, _ := unstructured.NestedSlice(cluster.Object, "spec", "taints")
			if len(taints) != 1 || taints[0].(map[string]any)["key"] != "maintenance" || taints[0].(map[string]any)["effect"] != "NoSchedule" {
				t.Errorf("Cluster taints = %v, want the fleet file's", taints)
			}
			if _, err := controlPlane.Core.CoreV1().Secrets(app.SystemNamespace).Get(t.Context(),
				"cluster-gpu-east-kubeconfig", metav1.GetOptions{}); err != nil {
				t.Errorf("the kubeconfig Secret of gpu-east: %v", err)
			}
		})
	}
}
