package scheduler_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// A Divide workload placed at its generation, whose pods run and hold no reservation, is packed again when the
// policy's percentages change (keptShare fails: the share differs). Its running pods must be credited as its own.
func TestDivideRepackCountsItsOwnPodsAsRoom(t *testing.T) {
	divide := func(eu, us int32) v1alpha1.SchedulePolicySpec {
		return v1alpha1.SchedulePolicySpec{
			ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
			SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
				PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: eu}, {TopologyValue: "us", Percentage: us}}}}
	}
	h := placementtest.NewHarness(t)
	h.AddCluster("eu", placementtest.Labels(map[string]string{"region": "eu"}))
	h.AddNodes("eu", cpuNodes("n", 1, "8"))
	h.AddCluster("us", placementtest.Labels(map[string]string{"region": "us"}))
	h.AddNodes("us", cpuNodes("n", 1, "8"))
	h.AddPolicy(anyPolicy(divide(50, 50)))
	id := h.AddWorkload(placementtest.Deployment("web", "fe").Component("web", 4, res("cpu", "2")).Scalable().Obj(), nil)
	d := h.Place(id)
	if d.Status != structs.StatusPlaced || d.Replicas["eu"] != 2 || d.Replicas["us"] != 2 {
		t.Fatalf("first placement %s %v", d.Status, d.Replicas)
	}
	for _, c := range []string{"eu", "us"} {
		reportRunning(t, h, c, id, 2, "4")
	}
	if r := h.Store.Snapshot().ReservationsOf(id); len(r) != 0 {
		t.Fatalf("reservations still held: %+v", r)
	}
	// 75/25: eu's share is 3 replicas (6 cpu); eu has 4 free plus the 4 its own 2 pods take.
	h.AddPolicy(anyPolicy(divide(75, 25)))
	moves := reevaluate(t, h, scheduler.AffectedByPolicy)
	if len(moves) != 1 || moves[0].Status != structs.StatusPlaced || moves[0].Replicas["eu"] != 3 {
		for _, m := range moves {
			t.Errorf("re-evaluation: %s replicas %v message %q reasons %v", m.Status, m.Replicas, m.Message, m.Reasons)
		}
		t.Fatalf("want Placed with eu=3 (its 2 running pods are its own room)")
	}
}

// A Duplicate workload whose policy becomes a single-cluster one: stickyCluster is "" (two clusters), so it is
// packed again over its clusters; the one copy it keeps fits where it runs, counting its own pods as room.
func TestDuplicateTakenOverCountsItsOwnPodsAsRoom(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("a")
	h.AddNodes("a", cpuNodes("n", 1, "8"))
	h.AddCluster("b")
	h.AddNodes("b", cpuNodes("n", 1, "8"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}}))
	id := h.AddWorkload(placementtest.Deployment("ops", "op").Component("m", 1, res("cpu", "8")).Obj(), nil)
	if d := h.Place(id); d.Status != structs.StatusPlaced || len(d.Clusters) != 2 {
		t.Fatalf("first placement %s %v", d.Status, d.Clusters)
	}
	for _, c := range []string{"a", "b"} {
		reportRunning(t, h, c, id, 1, "8")
	}
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	moves := reevaluate(t, h, scheduler.AffectedByPolicy)
	if len(moves) != 1 {
		t.Fatalf("%d decisions, want one placing the workload on one of its clusters", len(moves))
	}
	for _, m := range moves {
		if m.Status != structs.StatusPlaced {
			t.Errorf("re-evaluation: %s %v %q %v, want Placed on a or b where its copy runs", m.Status, m.Clusters, m.Message, m.Reasons)
		}
	}
}

// reportRunning has cluster report, on its 8-cpu node "n", pods of workload id running and requesting cpu in
// all, and nothing else.
func reportRunning(t *testing.T, h *placementtest.Harness, cluster, id string, pods int, cpu string) {
	t.Helper()
	label := structs.WorkloadLabelValue(id)
	running := res("cpu", cpu, "pods", strconv.Itoa(pods))
	if err := h.Store.UpsertNodes(h.NextSeq(), structs.NodeInfo{Cluster: cluster, Name: "n",
		Allocatable: res("cpu", "8", "memory", "64Gi"), Requested: running,
		PodsByWorkload: map[string]int64{label: int64(pods)}, RequestedByWorkload: map[string]corev1.ResourceList{label: running}}); err != nil {
		t.Fatal(err)
	}
}
