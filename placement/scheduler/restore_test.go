package scheduler_test

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// restoredPlacement records a workload placed on clusters (with replicas per cluster under Divide) and holding no
// reservation, as a restarted placer restores it from its last verdict.
func restoredPlacement(t *testing.T, h *placementtest.Harness, id, policy string, clusters []string, replicas map[string]int64) {
	t.Helper()
	wl := h.Store.Snapshot().Workload(id)
	d := &structs.Decision{ID: "restored/" + id, WorkloadID: id, Workload: wl.DisplayName(), Generation: wl.Generation,
		Policy: policy, Status: structs.StatusPlaced, Clusters: clusters, Replicas: replicas}
	if err := h.Store.ApplyPlan(h.NextSeq(), h.Now, &structs.Plan{Decisions: []*structs.Decision{d}}); err != nil {
		t.Fatal(err)
	}
}

// Repack packs a restored workload again where it is placed, and only there: the full gang on its cluster, a copy
// on each cluster of a Duplicate, a Divide's share on each of its clusters. Its pods a cluster reports count as
// its own room, a cluster that reports them all needs nothing, one where it no longer fits is said so, and a
// policy that is not capacity-aware reserves nothing.
func TestRepack(t *testing.T) {
	notAware := false
	tests := []struct {
		name     string
		spec     v1alpha1.SchedulePolicySpec
		pods     int64
		clusters []string
		replicas map[string]int64
		// setup changes the fleet after the workload is restored.
		setup func(t *testing.T, h *placementtest.Harness, id string)
		// want is the pods packed per cluster; unfit the clusters said not to fit.
		want  map[string]int64
		unfit []string
	}{
		{name: "one cluster", pods: 3, clusters: []string{"a"}, want: map[string]int64{"a": 3}},
		{name: "duplicate", spec: v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{
			SpreadMode: v1alpha1.SpreadModeDuplicate}}, pods: 2, clusters: []string{"a", "b"}, want: map[string]int64{"a": 2, "b": 2}},
		{name: "divide", spec: v1alpha1.SchedulePolicySpec{
			ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
			SpreadConstraints: &v1alpha1.SpreadConstraints{
				SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "name", PercentageSplit: []v1alpha1.PercentageSplit{
					{TopologyValue: "a", Percentage: 75}, {TopologyValue: "b", Percentage: 25}}}},
			pods: 4, clusters: []string{"a", "b"}, replicas: map[string]int64{"a": 3, "b": 1}, want: map[string]int64{"a": 3, "b": 1}},
		{name: "not capacity-aware", spec: v1alpha1.SchedulePolicySpec{CapacityAware: &notAware}, pods: 3,
			clusters: []string{"a"}, want: map[string]int64{}},
		{name: "its pods all reported", pods: 3, clusters: []string{"a"}, want: map[string]int64{},
			setup: func(t *testing.T, h *placementtest.Harness, id string) { reportRunning(t, h, "a", id, 3, "6") }},
		{name: "some of its pods reported count as its room", pods: 3, clusters: []string{"a"}, want: map[string]int64{"a": 3},
			setup: func(t *testing.T, h *placementtest.Harness, id string) {
				// 2 of its pods take 4 of the node's 8 cpu, another workload's pods 2: 2 free, 6 with its own.
				reportRunningBeside(t, h, "a", id, 2, "4", "2")
			}},
		{name: "no longer fits", pods: 3, clusters: []string{"a", "b"}, spec: v1alpha1.SchedulePolicySpec{
			SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}},
			want: map[string]int64{"b": 3}, unfit: []string{"a"},
			setup: func(t *testing.T, h *placementtest.Harness, id string) {
				reportRunningBeside(t, h, "a", id, 0, "0", "4")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			for _, c := range []string{"a", "b"} {
				h.AddCluster(c, placementtest.Labels(map[string]string{"name": c}))
				h.AddNodes(c, placementtest.NodeSpec{Prefix: "n", Allocatable: res("cpu", "8", "memory", "64Gi")})
			}
			h.AddPolicy(anyPolicy(tt.spec))
			id := h.AddWorkload(placementtest.Deployment("team", "web").Component("web", tt.pods, res("cpu", "2")).Scalable().Obj(), nil)
			restoredPlacement(t, h, id, "default", tt.clusters, tt.replicas)
			if tt.setup != nil {
				tt.setup(t, h, id)
			}
			before := *h.Store.Snapshot().Workload(id).Placement
			assignments, unfit := scheduler.Repack(h.Store.Snapshot(), id)
			got := map[string]int64{}
			for _, a := range assignments {
				got[a.Cluster] += a.Pods
				if a.PodRequest.Get(0) != 2000 {
					t.Errorf("assignment %+v: each pod asks for 2000m cpu", a)
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("pods packed per cluster %v, want %v", got, tt.want)
			}
			if keys := slices.Sorted(maps.Keys(unfit)); !slices.Equal(keys, tt.unfit) {
				t.Errorf("clusters it does not fit %v, want %v", unfit, tt.unfit)
			}
			if after := h.Store.Snapshot().Workload(id).Placement; !slices.Equal(after.Clusters, before.Clusters) {
				t.Errorf("placement changed: %v, was %v", after.Clusters, before.Clusters)
			}
			// What it packed is what the store takes as the restored decision's reservation.
			if len(assignments) > 0 {
				wl := h.Store.Snapshot().Workload(id)
				d := &structs.Decision{ID: "restored/" + id + "/reserved", WorkloadID: id, Workload: wl.DisplayName(),
					Generation: wl.Generation, Policy: "default", Status: structs.StatusPlaced, Clusters: tt.clusters,
					Replicas: tt.replicas, Assignments: assignments}
				if err := h.Store.ApplyPlan(h.NextSeq(), h.Now, &structs.Plan{Decisions: []*structs.Decision{d}}); err != nil {
					t.Fatalf("the store refuses the repacked reservation: %v", err)
				}
			}
		})
	}
}

// Repack returns nothing for a workload that is not placed.
func TestRepackOfAnUnplacedWorkload(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("a")
	h.AddNodes("a", cpuNodes("n", 1, "8"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	id := h.AddWorkload(placementtest.Deployment("team", "web").Component("web", 1, res("cpu", "1")).Obj(), nil)
	if assignments, unfit := scheduler.Repack(h.Store.Snapshot(), id); assignments != nil || unfit != nil {
		t.Errorf("Repack of an unplaced workload = %v, %v; want nothing", assignments, unfit)
	}
	if assignments, unfit := scheduler.Repack(h.Store.Snapshot(), "no/such/workload"); assignments != nil || unfit != nil {
		t.Errorf("Repack of an unknown workload = %v, %v; want nothing", assignments, unfit)
	}
}

// reportRunningBeside has cluster report, on its 8-cpu node "n", pods of workload id running and requesting cpu
// in all, beside pods of no placed workload requesting otherCPU.
func reportRunningBeside(t *testing.T, h *placementtest.Harness, cluster, id string, pods int64, cpu, otherCPU string) {
	t.Helper()
	label := structs.WorkloadLabelValue(id)
	own, other := res("cpu", cpu), res("cpu", otherCPU)
	total := own.Cpu().DeepCopy()
	total.Add(*other.Cpu())
	info := structs.NodeInfo{Cluster: cluster, Name: "n", Allocatable: res("cpu", "8", "memory", "64Gi"),
		Requested: corev1.ResourceList{corev1.ResourceCPU: total}}
	if pods > 0 {
		info.PodsByWorkload = map[string]int64{label: pods}
		info.RequestedByWorkload = map[string]corev1.ResourceList{label: own}
	}
	if err := h.Store.UpsertNodes(h.NextSeq(), info); err != nil {
		t.Fatal(err)
	}
}
