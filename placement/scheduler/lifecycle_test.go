package scheduler_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// TestStickiness: a placed workload stays on its cluster when re-evaluated while it still fits, even after a
// cluster it would now prefer appears; it moves only when its cluster stops qualifying.
func TestStickiness(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("first")
	h.AddNodes("first", cpuNodes("n", 1, "16"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 2, res("cpu", "4")).Obj(), nil)
	if d := h.Place(id); !slices.Equal(d.Clusters, []string{"first"}) {
		t.Fatalf("placed on %v, want [first]", d.Clusters)
	}

	// "tight" has exactly 8 CPUs: BinPack would prefer it (0 left vs 8) for a fresh workload.
	h.AddCluster("tight")
	h.AddNodes("tight", cpuNodes("n", 1, "8"))
	moves, _, err := h.Scheduler.Reevaluate(h.Store.Snapshot(), h.Planner, scheduler.AffectedByPolicy(h.Store.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 {
		t.Fatalf("moves = %+v, want none while the workload fits where it is", moves)
	}

	// first is tainted: the workload must move, and tight is the only cluster left.
	if err := h.Store.UpsertCluster(h.NextSeq(), &structs.Cluster{Name: "first", Ready: true,
		Taints: []corev1.Taint{{Key: "drain", Effect: corev1.TaintEffectNoExecute}}}); err != nil {
		t.Fatal(err)
	}
	snap := h.Store.Snapshot()
	moves, _, err = h.Scheduler.Reevaluate(snap, h.Planner, scheduler.AffectedByCluster(snap, "first"))
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 1 || !slices.Equal(moves[0].Clusters, []string{"tight"}) || moves[0].Previous.Clusters[0] != "first" {
		t.Fatalf("moves = %+v, want one move first -> tight", moves)
	}
	// The move released the reservations on first and reserved on tight.
	snap = h.Store.Snapshot()
	for _, r := range snap.ReservationsOf(id) {
		for _, n := range r.Nodes {
			if n.Cluster != "tight" {
				t.Errorf("reservation %s left on %s after the move", r.ID, n.Cluster)
			}
		}
	}
	if got := snap.Workload(id).Placement.Clusters; !slices.Equal(got, []string{"tight"}) {
		t.Errorf("stored placement = %v, want [tight]", got)
	}
}

// TestStickyWorkloadObservedRunning: once the cluster reports the workload's pods, the reservation is released
// and the pods count in Requested; re-evaluation must not count them twice and move the workload away.
func TestStickyWorkloadObservedRunning(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	h.AddNodes("c1", cpuNodes("n", 1, "8"))
	h.AddCluster("c2")
	h.AddNodes("c2", cpuNodes("n", 1, "8"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "8")).Obj(), nil)
	d := h.Place(id)
	home := d.Clusters[0]
	// The cluster now reports the pod: 8 CPUs requested, and one pod carrying the workload label.
	if err := h.Store.UpsertNodes(h.NextSeq(), structs.NodeInfo{Cluster: home, Name: "n", Allocatable: res("cpu", "8", "memory", "64Gi"),
		Requested: res("cpu", "8"), PodsByWorkload: map[string]int64{structs.WorkloadLabelValue(id): 1}}); err != nil {
		t.Fatal(err)
	}
	snap := h.Store.Snapshot()
	if rs := snap.ReservationsOf(id); len(rs) != 0 {
		t.Fatalf("reservations = %d, want 0 once the pod is observed", len(rs))
	}
	if free := snap.Capacity(home).Free.Get(structs.ResourceCPU); free != 0 {
		t.Errorf("free CPU on %s = %d, want 0 (requested, not reserved twice)", home, free)
	}
	moves, _, err := h.Scheduler.Reevaluate(snap, h.Planner, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 {
		t.Errorf("moves = %+v, want none", moves)
	}
}

func TestBlockedWakesOnlyOnRelevantEvents(t *testing.T) {
	capacityOnA := &structs.Decision{WorkloadID: "capacity-a", Status: structs.StatusUnschedulable,
		RejectCodes: map[string]structs.RejectCode{"a": structs.RejectCapacity, "b": structs.RejectTaint}}
	noPolicy := &structs.Decision{WorkloadID: "no-policy", Status: structs.StatusNoPolicy}
	// spread is a Duplicate copy placed on c that cluster d rejected for capacity and e for a taint.
	spread := &structs.Decision{WorkloadID: "spread", Status: structs.StatusPlaced, Clusters: []string{"c"}, Widenable: true,
		RejectCodes: map[string]structs.RejectCode{"d": structs.RejectCapacity, "e": structs.RejectTaint}}
	cases := []struct {
		name  string
		event scheduler.Event
		want  []string
	}{
		{"capacity freed where it was short wakes it", scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "a"}, []string{"capacity-a"}},
		{"capacity freed where a taint blocked it does not", scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "b"}, nil},
		{"capacity freed elsewhere does not", scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "c"}, nil},
		{"a changed cluster wakes unschedulable workloads, not policy-less or placed ones", scheduler.Event{Kind: scheduler.EventClusterChanged, Cluster: "d"}, []string{"capacity-a"}},
		{"a changed policy wakes every unplaced workload", scheduler.Event{Kind: scheduler.EventPolicyChanged}, []string{"capacity-a", "no-policy"}},
		{"capacity freed where a spread was short wakes it", scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "d"}, []string{"spread"}},
		{"capacity freed where a taint kept a spread off does not", scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "e"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := scheduler.NewBlocked()
			b.Record(capacityOnA)
			b.Record(noPolicy)
			b.Record(spread)
			if b.Len() != 2 || b.Decision("spread") != nil {
				t.Fatalf("blocked = %d, spread's decision %v: a placed spread must not count as blocked", b.Len(), b.Decision("spread"))
			}
			got := b.Wake(tc.event)
			if !slices.Equal(got, tc.want) {
				t.Errorf("woken = %v, want %v", got, tc.want)
			}
			stillBlocked := 2
			for _, id := range got {
				if id != "spread" {
					stillBlocked--
				}
			}
			if b.Len() != stillBlocked {
				t.Errorf("still blocked = %d, want %d", b.Len(), stillBlocked)
			}
		})
	}
	b := scheduler.NewBlocked()
	b.Record(capacityOnA)
	b.Record(&structs.Decision{WorkloadID: "capacity-a", Status: structs.StatusPlaced})
	if b.Len() != 0 {
		t.Errorf("a placed decision must unblock the workload")
	}
	// Were a spread kept off a cluster by its selector alone recorded (the scheduler does not mark such a
	// decision widenable), freed capacity there would still have nothing to wake.
	b.Record(&structs.Decision{WorkloadID: "selected-away", Status: structs.StatusPlaced, Widenable: true,
		RejectCodes: map[string]structs.RejectCode{"d": structs.RejectSelector}})
	if got := b.Wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "d"}); len(got) != 0 {
		t.Errorf("woken = %v, want nothing for a spread no capacity kept off a cluster", got)
	}
}

// TestStalePlanIsReplanned: two decisions computed on the same snapshot compete for one node; the store rejects
// the second as stale and Process plans it again on the fresh view, where it no longer fits.
func TestStalePlanIsReplanned(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	h.AddNodes("c1", cpuNodes("n", 1, "8"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	a := h.AddWorkload(placementtest.PyTorchJob("ml", "a").Component("worker", 1, res("cpu", "6")).Obj(), nil)
	b := h.AddWorkload(placementtest.PyTorchJob("ml", "b").Component("worker", 1, res("cpu", "6")).Obj(), nil)
	stale := h.Store.Snapshot()
	planA, err := h.Scheduler.Schedule(stale, a)
	if err != nil {
		t.Fatal(err)
	}
	planB, err := h.Scheduler.Schedule(stale, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Planner.SubmitPlan(planA); err != nil {
		t.Fatalf("first plan: %v", err)
	}
	if _, err := h.Planner.SubmitPlan(planB); err == nil {
		t.Fatal("second plan on the same snapshot was accepted; the node would hold 12 of 8 CPUs")
	}
	plan, _, err := h.Scheduler.Process(stale, h.Planner, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := plan.Decisions[0]; got.Status != structs.StatusUnschedulable {
		t.Errorf("re-planned decision = %s, want Unschedulable", got.Status)
	}
	assertNoOvercommit(t, h)
}

// TestRequeueOnFreedCapacity walks the blocked path end to end: a job that does not fit is blocked with its
// reasons, an unrelated cluster's change in capacity does not wake it, and the end of the job holding its
// cluster does; it is then placed.
func TestRequeueOnFreedCapacity(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	h.AddNodes("c1", cpuNodes("n", 1, "8"))
	h.AddCluster("c2")
	h.AddNodes("c2", cpuNodes("n", 1, "2"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	blocked := scheduler.NewBlocked()
	first := h.AddWorkload(placementtest.PyTorchJob("ml", "first").Component("worker", 1, res("cpu", "6")).Obj(), nil)
	blocked.Record(h.Place(first))
	second := h.AddWorkload(placementtest.PyTorchJob("ml", "second").Component("worker", 1, res("cpu", "6")).Obj(), nil)
	d := h.Place(second)
	blocked.Record(d)
	if d.Status != structs.StatusUnschedulable || blocked.Decision(second) == nil {
		t.Fatalf("second = %s, want Unschedulable and blocked", d.Status)
	}
	if got := blocked.Decision(second).Reasons["c1"]; got != "needs cpu 6 in total, 2 free" {
		t.Errorf("kept reason for c1 = %q", got)
	}
	if woken := blocked.Wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "elsewhere"}); len(woken) != 0 {
		t.Fatalf("woken by an unrelated cluster: %v", woken)
	}
	if err := h.Store.DeleteWorkload(h.NextSeq(), first); err != nil {
		t.Fatal(err)
	}
	woken := blocked.Wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: "c1"})
	if !slices.Equal(woken, []string{second}) {
		t.Fatalf("woken = %v, want [%s]", woken, second)
	}
	if d := h.Place(second); d.Status != structs.StatusPlaced || d.Clusters[0] != "c1" {
		t.Errorf("after the wake: %s on %v, want Placed on c1", d.Status, d.Clusters)
	}
}

// TestDuplicateWidensWhenAClusterReturns: a Duplicate workload placed while one of its clusters was NotReady
// runs on the others only; once that cluster is Ready again, re-evaluating what its change affects spreads the
// workload onto it.
func TestDuplicateWidensWhenAClusterReturns(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("a")
	h.AddCluster("b", placementtest.NotReady())
	h.AddNodes("a", cpuNodes("n", 1, "16"))
	h.AddNodes("b", cpuNodes("n", 1, "16"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}}))
	id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "1")).Obj(), nil)
	if d := h.Place(id); !slices.Equal(d.Clusters, []string{"a"}) {
		t.Fatalf("placed on %v, want [a] while b is NotReady", d.Clusters)
	}

	h.AddCluster("b")
	snap := h.Store.Snapshot()
	if got := scheduler.AffectedByCluster(snap, "b"); len(got) != 0 {
		t.Errorf("workloads on b = %v, want none", got)
	}
	affected := scheduler.AffectedByClusterChange(snap, "b")
	if !slices.Equal(affected, []string{id}) {
		t.Fatalf("affected by b's change = %v, want the Duplicate workload %s", affected, id)
	}
	moves, _, err := h.Scheduler.Reevaluate(snap, h.Planner, affected)
	if err != nil {
		t.Fatal(err)
	}
	if len(moves) != 1 || !slices.Equal(moves[0].Clusters, []string{"a", "b"}) {
		t.Fatalf("moves = %+v, want the workload spread over [a b]", moves)
	}
}

// TestClusterChangeLeavesOtherPoliciesAlone: without a Duplicate policy, a cluster's change re-evaluates only
// the workloads on it; a fill-and-spill workload elsewhere is not moved back by a cluster that returns.
func TestClusterChangeLeavesOtherPoliciesAlone(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("a")
	h.AddCluster("b", placementtest.NotReady())
	h.AddNodes("a", cpuNodes("n", 1, "16"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "1")).Obj(), nil)
	if d := h.Place(id); !slices.Equal(d.Clusters, []string{"a"}) {
		t.Fatalf("placed on %v, want [a]", d.Clusters)
	}
	h.AddCluster("b")
	if got := scheduler.AffectedByClusterChange(h.Store.Snapshot(), "b"); len(got) != 0 {
		t.Fatalf("affected by b's change = %v, want none", got)
	}
}

// TestDuplicateWidenableOnlyForCapacity: a placed Duplicate decision is widenable (kept for freed capacity to
// retry) when a cluster turned it away for capacity, not when every rejection is one a cluster change covers.
func TestDuplicateWidenableOnlyForCapacity(t *testing.T) {
	for _, withTiny := range []bool{false, true} {
		h := placementtest.NewHarness(t)
		h.AddCluster("big")
		h.AddNodes("big", cpuNodes("n", 1, "16"))
		h.AddCluster("down", placementtest.NotReady())
		h.AddNodes("down", cpuNodes("n", 1, "16"))
		if withTiny {
			h.AddCluster("tiny")
			h.AddNodes("tiny", cpuNodes("n", 1, "1"))
		}
		h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}}))
		d := h.Place(h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "4")).Obj(), nil))
		if !slices.Equal(d.Clusters, []string{"big"}) || d.Widenable != withTiny {
			t.Errorf("with a too-small cluster %v: placed on %v, widenable %v; want [big], widenable %v (codes %v)",
				withTiny, d.Clusters, d.Widenable, withTiny, d.RejectCodes)
		}
	}
}

// TestDuplicateHoldsCopiesOnNotReadyClusters: a cluster that stops being Ready keeps the Duplicate copy it has,
// since there is nowhere to fail it over to, unless it no longer qualifies for another reason.
func TestDuplicateHoldsCopiesOnNotReadyClusters(t *testing.T) {
	duplicate := &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}
	tests := []struct {
		name string
		// down is how cluster b is rewritten once the copy is placed; it is always NotReady.
		down         []placementtest.ClusterOpt
		avoidB       bool
		wanted       []string
		wantRejected bool
	}{
		{name: "NotReady only: the copy stays", wanted: []string{"a", "b"}},
		{name: "NotReady and no longer selected: withdrawn", down: []placementtest.ClusterOpt{
			placementtest.Labels(map[string]string{"tier": "retired"})}, wanted: []string{"a"}, wantRejected: true},
		{name: "NotReady and no longer serving the API: withdrawn", down: []placementtest.ClusterOpt{
			placementtest.APIs("v1/ConfigMap")}, wanted: []string{"a"}, wantRejected: true},
		{name: "NotReady and avoided: withdrawn", avoidB: true, wanted: []string{"a"}, wantRejected: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			for _, c := range []string{"a", "b"} {
				h.AddCluster(c, placementtest.Labels(map[string]string{"tier": "prod"}))
				h.AddNodes(c, cpuNodes("n", 1, "16"))
			}
			h.AddPolicy(placementtest.Policy("spread", v1alpha1.SchedulePolicySpec{
				ClusterSelector:   &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}},
				SpreadConstraints: duplicate}))
			job := placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "1")).Obj()
			id := h.AddWorkload(job, nil)
			if d := h.Place(id); !slices.Equal(d.Clusters, []string{"a", "b"}) {
				t.Fatalf("placed on %v, want [a b]", d.Clusters)
			}

			opts := append([]placementtest.ClusterOpt{placementtest.Labels(map[string]string{"tier": "prod"})}, tt.down...)
			h.AddCluster("b", append(opts, placementtest.NotReady())...)
			if tt.avoidB {
				info := structs.WorkloadInfo{Analysis: job, Generation: 1, Avoid: map[string]string{"b": "its pods stayed Pending there"}}
				if _, err := h.Store.UpsertWorkload(h.NextSeq(), info); err != nil {
					t.Fatal(err)
				}
			}
			d := h.Place(id)
			if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, tt.wanted) {
				t.Fatalf("re-placed %s on %v, want Placed on %v", d.Status, d.Clusters, tt.wanted)
			}
			why, rejected := d.Reasons["b"]
			if rejected != tt.wantRejected {
				t.Errorf("b rejected = %v (%q), want %v", rejected, why, tt.wantRejected)
			}
		})
	}
}

// TestClusterTaintEffects: a cluster tainted NoSchedule takes no new workloads but keeps those already there,
// as Kubernetes keeps running pods on a node tainted NoSchedule; tainted NoExecute, it sends them away. A cluster
// whose Cluster object is invalid (a misspelt effect an older CRD let in) is treated as tainted NoSchedule, and
// says why: ignoring the taint placed there what it was meant to keep off.
func TestClusterTaintEffects(t *testing.T) {
	const invalid = `takes no new workloads: Cluster first is invalid: spec.taints[0].effect: Unsupported value: "NoSchedul"`
	for _, tt := range []struct {
		name       string
		taint      corev1.Taint
		invalid    string
		wantMoves  int
		wantReason string
	}{
		{"NoSchedule", corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}, "", 0, "has taint maintenance:NoSchedule"},
		{"NoExecute", corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute}, "", 1, "has taint maintenance:NoExecute"},
		{"invalid", corev1.Taint{Key: "maintenance", Value: "true", Effect: "NoSchedul"}, invalid, 0, invalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("first")
			h.AddNodes("first", cpuNodes("n", 1, "16"))
			h.AddCluster("second")
			h.AddNodes("second", cpuNodes("m", 1, "16"))
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			placed := h.AddWorkload(placementtest.PyTorchJob("ml", "placed").Component("worker", 2, res("cpu", "4")).Obj(), nil)
			d := h.Place(placed)
			if len(d.Clusters) != 1 || d.Clusters[0] != "first" {
				t.Fatalf("placed on %v, want first", d.Clusters)
			}
			where := d.Clusters[0]
			if err := h.Store.UpsertCluster(h.NextSeq(), &structs.Cluster{Name: where, Ready: true,
				Taints: []corev1.Taint{tt.taint}, Invalid: tt.invalid}); err != nil {
				t.Fatal(err)
			}
			snap := h.Store.Snapshot()
			moves, _, err := h.Scheduler.Reevaluate(snap, h.Planner, scheduler.AffectedByCluster(snap, where))
			if err != nil {
				t.Fatal(err)
			}
			if len(moves) != tt.wantMoves {
				t.Errorf("moves = %+v, want %d", moves, tt.wantMoves)
			}
			fresh := h.AddWorkload(placementtest.PyTorchJob("ml", "fresh").Component("worker", 1, res("cpu", "1")).Obj(), nil)
			d = h.Place(fresh)
			if slices.Contains(d.Clusters, where) {
				t.Errorf("a new workload was placed on %s, tainted %s", where, tt.name)
			}
			if !strings.Contains(d.Reasons[where], tt.wantReason) {
				t.Errorf("reason for %s = %q, want it to say %q", where, d.Reasons[where], tt.wantReason)
			}
		})
	}
}
