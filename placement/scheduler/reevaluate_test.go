package scheduler_test

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// reportPods makes a node report what runs on it, as the cluster producer does: its requested cpu and the
// pods of each workload label, which releases the reservations there.
func reportPods(t *testing.T, h *placementtest.Harness, cluster, allocatable, requested string, pods map[string]int64) {
	t.Helper()
	if err := h.Store.UpsertNodes(h.NextSeq(), structs.NodeInfo{Cluster: cluster, Name: "n",
		Allocatable: res("cpu", allocatable, "memory", "64Gi"), Requested: res("cpu", requested), PodsByWorkload: pods}); err != nil {
		t.Fatal(err)
	}
}

func reevaluate(t *testing.T, h *placementtest.Harness, affected func(scheduler.State) []string) []*structs.Decision {
	t.Helper()
	snap := h.Store.Snapshot()
	moves, _, err := h.Scheduler.Reevaluate(snap, h.Planner, affected(snap))
	if err != nil {
		t.Fatal(err)
	}
	return moves
}

// TestRunningWorkloadsStayOnReevaluation: once a cluster reports a placed workload's pods, they count in its
// requested capacity; a re-evaluation (a policy edit, a namespace change, a cluster joining) must not count
// them against the workload and move it off the cluster it fills, whatever the policy's spread.
func TestRunningWorkloadsStayOnReevaluation(t *testing.T) {
	divide := &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
		PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 50}, {TopologyValue: "us", Percentage: 50}}}
	tests := []struct {
		name      string
		spec      v1alpha1.SchedulePolicySpec
		workloads []*karta.Analysis
		// podsPerCluster is what each placed workload runs on each of its clusters.
		podsPerCluster int64
	}{
		{name: "one cluster", workloads: []*karta.Analysis{placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "8")).Obj()},
			podsPerCluster: 1},
		{name: "Duplicate", spec: v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}},
			workloads: []*karta.Analysis{placementtest.Deployment("ops", "operator").Component("manager", 1, res("cpu", "8")).Obj()}, podsPerCluster: 1},
		{name: "Divide", spec: v1alpha1.SchedulePolicySpec{SpreadConstraints: divide,
			ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}}},
			workloads: []*karta.Analysis{placementtest.Deployment("web", "fe").Component("web", 4, res("cpu", "4")).Scalable().Obj()}, podsPerCluster: 2},
		{name: "groupBy", spec: v1alpha1.SchedulePolicySpec{GroupBy: &v1alpha1.GroupBy{LabelKey: "team"}},
			workloads: []*karta.Analysis{placementtest.PyTorchJob("ml", "a").Component("worker", 1, res("cpu", "4")).Obj(),
				placementtest.PyTorchJob("ml", "b").Component("worker", 1, res("cpu", "4")).Obj()}, podsPerCluster: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("eu", placementtest.Labels(map[string]string{"region": "eu"}))
			h.AddNodes("eu", cpuNodes("n", 1, "8"))
			h.AddCluster("us", placementtest.Labels(map[string]string{"region": "us"}))
			h.AddNodes("us", cpuNodes("n", 1, "8"))
			h.AddPolicy(anyPolicy(tt.spec))
			var ids []string
			for _, a := range tt.workloads {
				ids = append(ids, h.AddWorkload(a, map[string]string{"team": "x"}))
			}
			for _, id := range ids {
				if wl := h.Store.Snapshot().Workload(id); wl.Placement == nil {
					if d := h.Place(id); d.Status != structs.StatusPlaced {
						t.Fatalf("%s: %s %q %v", id, d.Status, d.Message, d.Reasons)
					}
				}
			}
			// Every cluster that runs something is full.
			pods := map[string]map[string]int64{}
			for _, id := range ids {
				for _, c := range h.Store.Snapshot().Workload(id).Placement.Clusters {
					if pods[c] == nil {
						pods[c] = map[string]int64{}
					}
					pods[c][structs.WorkloadLabelValue(id)] = tt.podsPerCluster
				}
			}
			for cluster, p := range pods {
				reportPods(t, h, cluster, "8", "8", p)
			}
			before := map[string][]string{}
			for _, id := range ids {
				before[id] = h.Store.Snapshot().Workload(id).Placement.Clusters
			}

			h.AddCluster("late", placementtest.Labels(map[string]string{"region": "eu"}))
			h.AddNodes("late", cpuNodes("n", 1, "32"))
			affected := []func(scheduler.State) []string{scheduler.AffectedByPolicy,
				func(st scheduler.State) []string { return scheduler.AffectedByClusterChange(st, "late") }}
			for _, a := range affected {
				for _, m := range reevaluate(t, h, a) {
					if m.Status != structs.StatusPlaced || !isSubset(before[m.WorkloadID], m.Clusters) {
						t.Errorf("%s left a cluster it runs on: %s %v -> %v, reasons %v", m.WorkloadID, m.Status, before[m.WorkloadID], m.Clusters, m.Reasons)
					}
				}
			}
		})
	}
}

func isSubset(sub, of []string) bool {
	for _, s := range sub {
		if !slices.Contains(of, s) {
			return false
		}
	}
	return true
}

// TestGroupFailsOverTogether: a groupBy group whose cluster goes NotReady moves, all of it, to a cluster
// that fits the members' combined demand, instead of being held to the cluster it can no longer use.
func TestGroupFailsOverTogether(t *testing.T) {
	for _, members := range []int{1, 3} {
		h := placementtest.NewHarness(t)
		h.AddCluster("a")
		h.AddNodes("a", cpuNodes("n", 1, "16"))
		h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{GroupBy: &v1alpha1.GroupBy{LabelKey: "team"}}))
		var ids []string
		for i := range members {
			ids = append(ids, h.AddWorkload(placementtest.PyTorchJob("ml", string(rune('p'+i))).Component("worker", 1, res("cpu", "4")).Obj(),
				map[string]string{"team": "t"}))
		}
		if d := h.Place(ids[0]); !slices.Equal(d.Clusters, []string{"a"}) {
			t.Fatalf("%d members: placed on %v, want a", members, d.Clusters)
		}
		h.AddCluster("b")
		h.AddNodes("b", cpuNodes("n", 1, "8"))
		h.AddCluster("c")
		h.AddNodes("c", cpuNodes("n", 1, "32"))
		if err := h.Store.UpsertCluster(h.NextSeq(), &structs.Cluster{Name: "a", Ready: false}); err != nil {
			t.Fatal(err)
		}
		reevaluate(t, h, func(st scheduler.State) []string { return scheduler.AffectedByCluster(st, "a") })
		// BinPack takes b for one member; b would fit each of three alone but not together (12 of 8 cpu).
		want := "b"
		if members > 2 {
			want = "c"
		}
		for _, id := range ids {
			if got := h.Store.Snapshot().Workload(id).Placement; got == nil || !slices.Equal(got.Clusters, []string{want}) {
				t.Errorf("%d members: %s is placed on %+v, want %s with its group", members, id, got, want)
			}
		}
	}
}

// TestPolicyTakeoverIsRecorded: a higher-priority policy that now governs a placed workload where it runs is
// recorded in its placement, so the new policy's rules apply from then on.
func TestPolicyTakeoverIsRecorded(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	h.AddNodes("c1", cpuNodes("n", 1, "16"))
	h.AddPolicy(placementtest.Policy("old", v1alpha1.SchedulePolicySpec{}))
	id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "4")).Obj(), nil)
	if d := h.Place(id); d.Policy != "old" {
		t.Fatalf("placed by %q", d.Policy)
	}
	h.AddPolicy(placementtest.Policy("new", v1alpha1.SchedulePolicySpec{Priority: 10, RescheduleOnFailure: true}))
	moves := reevaluate(t, h, scheduler.AffectedByPolicy)
	if len(moves) != 1 || moves[0].Policy != "new" || !slices.Equal(moves[0].Clusters, []string{"c1"}) {
		t.Errorf("re-evaluation returned %v, want one decision of policy new keeping c1", moves)
	}
	if got := h.Store.Snapshot().Workload(id).Placement; got.Policy != "new" || !slices.Equal(got.Clusters, []string{"c1"}) {
		t.Errorf("stored placement %+v, want policy new on c1", got)
	}
	if again := reevaluate(t, h, scheduler.AffectedByPolicy); len(again) != 0 {
		t.Errorf("a second re-evaluation changed %d workloads, want none", len(again))
	}
}

// TestHugeReplicaCountsPackInOneStep: packing puts as many pods on a node as fit at once, so a workload of
// two billion replicas (a typo, or an unvalidated CR) is decided like a small one instead of holding the placer
// for a step per pod.
func TestHugeReplicaCountsPackInOneStep(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	h.AddNodes("c1", placementtest.NodeSpec{Prefix: "big", Allocatable: res("cpu", "2000000", "memory", "64Gi", "pods", "4000000000")})
	h.AddNodes("c1", placementtest.NodeSpec{Prefix: "small", Allocatable: res("cpu", "1", "memory", "64Gi", "pods", "110")})
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	id := h.AddWorkload(placementtest.Deployment("web", "many").Component("web", 2_000_000_000, res("cpu", "1m")).Scalable().Obj(), nil)
	d := h.Place(id)
	if d.Status != structs.StatusPlaced {
		t.Fatalf("%s: %q %v", d.Status, d.Message, d.Reasons)
	}
	var pods int64
	for _, a := range d.Assignments {
		pods += a.Pods
	}
	if pods != 2_000_000_000 || len(d.Assignments) != 1 || d.Assignments[0].Node != "big" {
		t.Errorf("assignments %+v, want all 2,000,000,000 pods on big", d.Assignments)
	}
}

// TestDivideOfZeroReplicasStillCreatesTheObject: a Deployment scaled to zero under Divide goes, with zero
// replicas, to one cluster, so it exists to be scaled up; before, it was Placed on no cluster at all.
func TestDivideOfZeroReplicasStillCreatesTheObject(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("eu", placementtest.Labels(map[string]string{"region": "eu"}))
	h.AddNodes("eu", cpuNodes("n", 1, "8"))
	h.AddCluster("us", placementtest.Labels(map[string]string{"region": "us"}))
	h.AddNodes("us", cpuNodes("n", 1, "8"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{
		ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
		SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
			PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "us", Percentage: 70}, {TopologyValue: "eu", Percentage: 30}}}}))
	id := h.AddWorkload(placementtest.Deployment("web", "idle").Component("web", 0, res("cpu", "1")).Scalable().Obj(), nil)
	d := h.Place(id)
	if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, []string{"us"}) || d.Replicas["us"] != 0 || len(d.Replicas) != 1 {
		t.Fatalf("decision %s on %v replicas %v (%q), want Placed on us with 0 replicas", d.Status, d.Clusters, d.Replicas, d.Message)
	}
	if moves := reevaluate(t, h, scheduler.AffectedByPolicy); len(moves) != 0 {
		t.Errorf("re-evaluation moved it: %v", moves[0].Clusters)
	}
}

// TestDivideSharesAValueAmongItsClusters: when no one cluster of a topology value fits the value's share,
// its clusters share it, each taking as many replicas as fit; once the replicas run, a re-evaluation keeps
// them where they are. A share that even all the value's clusters cannot take is refused, saying so.
func TestDivideSharesAValueAmongItsClusters(t *testing.T) {
	tests := []struct {
		name         string
		replicas     int64
		wantStatus   structs.DecisionStatus
		wantReplicas map[string]int64
		wantMessage  string
	}{
		{"the eu share over both eu clusters", 10, structs.StatusPlaced, map[string]int64{"eu-1": 4, "eu-2": 3, "us-1": 3}, ""},
		{"an eu share no eu cluster alone fits, nor both", 20, structs.StatusUnschedulable, nil,
			"the clusters with region=eu do not fit its 14 replicas, alone or together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			for _, c := range []struct{ name, region, cpu string }{{"eu-1", "eu", "4"}, {"eu-2", "eu", "4"}, {"us-1", "us", "8"}} {
				h.AddCluster(c.name, placementtest.Labels(map[string]string{"region": c.region}))
				h.AddNodes(c.name, cpuNodes("n", 1, c.cpu))
			}
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{
				ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
				SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
					PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 70}, {TopologyValue: "us", Percentage: 30}}}}))
			id := h.AddWorkload(placementtest.Deployment("web", "fe").Component("web", tt.replicas, res("cpu", "1")).Scalable().Obj(), nil)
			d := h.Place(id)
			if d.Status != tt.wantStatus || !maps.Equal(d.Replicas, tt.wantReplicas) || d.Message != tt.wantMessage {
				t.Fatalf("decision %s replicas %v message %q, want %s %v %q", d.Status, d.Replicas, d.Message,
					tt.wantStatus, tt.wantReplicas, tt.wantMessage)
			}
			if d.Status != structs.StatusPlaced {
				return
			}
			for cluster, n := range d.Replicas {
				reportPods(t, h, cluster, map[string]string{"eu-1": "4", "eu-2": "4", "us-1": "8"}[cluster],
					strconv.FormatInt(n, 10), map[string]int64{structs.WorkloadLabelValue(id): n})
			}
			if moves := reevaluate(t, h, scheduler.AffectedByPolicy); len(moves) != 0 {
				t.Errorf("re-evaluation moved the running replicas: %v", moves[0].Replicas)
			}
		})
	}
}
