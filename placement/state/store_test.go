package state

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	memdb "github.com/hashicorp/go-memdb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

func TestSchemaIsValid(t *testing.T) {
	for name, db := range map[string]*memdb.DBSchema{"fleet": schema(), "ledger": ledgerSchema()} {
		if _, err := memdb.NewMemDB(db); err != nil {
			t.Fatalf("%s schema: %v", name, err)
		}
	}
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func newTestStore(t *testing.T) *Store {
	t.Helper()
	s, err := NewStore(Config{ReservationTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertCluster(1, &structs.Cluster{Name: "c1", Ready: true}); err != nil {
		t.Fatal(err)
	}
	nodes := []structs.NodeInfo{
		{Cluster: "c1", Name: "a", Allocatable: corev1.ResourceList{"cpu": qty("8"), "nvidia.com/gpu": qty("8")},
			Requested: corev1.ResourceList{"cpu": qty("1500m"), "nvidia.com/gpu": qty("6")}},
		{Cluster: "c1", Name: "b", Allocatable: corev1.ResourceList{"cpu": qty("4"), "nvidia.com/gpu": qty("4")}},
		{Cluster: "c1", Name: "cordoned", Unschedulable: true, Allocatable: corev1.ResourceList{"cpu": qty("64")}},
	}
	if err := s.UpsertNodes(2, nodes...); err != nil {
		t.Fatal(err)
	}
	return s
}

func gpuIndex(t *testing.T, snap *Snapshot) int {
	t.Helper()
	i, ok := snap.Resources().Index("nvidia.com/gpu")
	if !ok {
		t.Fatal("nvidia.com/gpu not interned")
	}
	return i
}

// TestCapacitySummary: free = allocatable − requested over schedulable nodes; cordoned nodes add nothing.
// By hand: free CPU a 6.5 + b 4 = 10.5 (10500m), free GPU 2 + 4 = 6, the most free GPU is b's 4.
func TestCapacitySummary(t *testing.T) {
	snap := newTestStore(t).Snapshot()
	c := snap.Capacity("c1")
	gpu := gpuIndex(t, snap)
	if got := c.Free.Get(structs.ResourceCPU); got != 10500 {
		t.Errorf("free cpu = %dm, want 10500m", got)
	}
	if got := c.Free.Get(gpu); got != 6 {
		t.Errorf("free gpu = %d, want 6", got)
	}
	if c.MaxFree.Get(gpu) != 4 || c.MaxFreeNode[gpu] != "b" {
		t.Errorf("max free gpu = %d on %q, want 4 on b", c.MaxFree.Get(gpu), c.MaxFreeNode[gpu])
	}
	// Pods: the fleet file left them out, so each node gets the kubelet default of 110.
	if got := c.Allocatable.Get(structs.ResourcePods); got != 2*DefaultMaxPods {
		t.Errorf("allocatable pods = %d, want %d", got, 2*DefaultMaxPods)
	}
	if got := snap.Index(); got != 2 {
		t.Errorf("index = %d, want 2", got)
	}
	if got := snap.TableIndex(TableNodes); got != 2 {
		t.Errorf("nodes table index = %d, want 2", got)
	}
}

func addWorkload(t *testing.T, s *Store, seq uint64, name string, gpus string) *structs.Workload {
	t.Helper()
	one := int64(1)
	wl, err := s.UpsertWorkload(seq, structs.WorkloadInfo{Generation: 1, Analysis: &karta.Analysis{
		APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ml", Name: name,
		Components: []karta.ComponentInstance{{Name: "worker", Replicas: &one, Pods: 1,
			PodRequests: corev1.ResourceList{"nvidia.com/gpu": qty(gpus)}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return wl
}

func placeOn(wl *structs.Workload, snap *Snapshot, node string) *structs.Plan {
	d := &structs.Decision{ID: structs.DecisionID(wl.ID, wl.Generation, snap.Index()), WorkloadID: wl.ID,
		Generation: wl.Generation, Status: structs.StatusPlaced, Clusters: []string{"c1"},
		Assignments: []structs.Assignment{{Cluster: "c1", Node: node, Component: "worker", Pods: 1,
			PodRequest: wl.PodGroups[0].Request}}}
	return &structs.Plan{Decisions: []*structs.Decision{d}}
}

// TestReservationLifecycle walks a reservation through its three ways out: the cluster reporting the pod,
// deletion of the workload, and expiry.
func TestReservationLifecycle(t *testing.T) {
	s := newTestStore(t)
	now := time.Unix(1000, 0)
	observed := addWorkload(t, s, 3, "observed", "2")
	deleted := addWorkload(t, s, 4, "deleted", "1")
	expired := addWorkload(t, s, 5, "expired", "1")
	for i, wl := range []*structs.Workload{observed, deleted, expired} {
		if err := s.ApplyPlan(uint64(6+i), now, placeOn(wl, s.Snapshot(), "b")); err != nil {
			t.Fatalf("apply %s: %v", wl.Name, err)
		}
	}
	snap := s.Snapshot()
	gpu := gpuIndex(t, snap)
	// b had 4 free GPUs; 2 + 1 + 1 are reserved.
	if free := snap.Capacity("c1").Node("b").Free.Get(gpu); free != 0 {
		t.Fatalf("free gpu on b = %d, want 0 after reserving 4", free)
	}

	// b reports the observed workload's pod: its reservation goes, its GPUs now count as requested.
	if err := s.UpsertNodes(9, structs.NodeInfo{Cluster: "c1", Name: "b",
		Allocatable:    corev1.ResourceList{"cpu": qty("4"), "nvidia.com/gpu": qty("4")},
		Requested:      corev1.ResourceList{"nvidia.com/gpu": qty("2")},
		PodsByWorkload: map[string]int64{structs.WorkloadLabelValue(observed.ID): 1}}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Snapshot().ReservationsOf(observed.ID)); n != 0 {
		t.Errorf("observed workload still has %d reservations", n)
	}
	if err := s.DeleteWorkload(10, deleted.ID); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Snapshot().ReservationsOf(deleted.ID)); n != 0 {
		t.Errorf("deleted workload still has %d reservations", n)
	}
	// One second before the TTL nothing expires; at the TTL the last reservation does.
	if n, err := s.ExpireReservations(11, now.Add(time.Minute-time.Second)); err != nil || n != 0 {
		t.Errorf("early expiry released %d (%v), want 0", n, err)
	}
	if n, err := s.ExpireReservations(12, now.Add(time.Minute)); err != nil || n != 1 {
		t.Errorf("expiry released %d (%v), want 1", n, err)
	}
	// By hand: 4 GPUs − 2 requested by the observed pod, nothing reserved.
	if free := s.Snapshot().Capacity("c1").Node("b").Free.Get(gpu); free != 2 {
		t.Errorf("free gpu on b = %d, want 2", free)
	}
}

// TestReservationLeavesOutTheWorkloadsRunningPods: a decision packing pods of a workload onto a node where
// some of its pods already run (a grown workload kept where it runs) reserves only what those pods do not
// already take, so the node is neither counted twice for them nor refused as over-committed; the
// reservation still goes once as many of the workload's pods run there as were packed.
func TestReservationLeavesOutTheWorkloadsRunningPods(t *testing.T) {
	s := newTestStore(t)
	wl := addWorkload(t, s, 3, "grown", "1")
	label := structs.WorkloadLabelValue(wl.ID)
	running := func(seq uint64, pods int64) {
		t.Helper()
		gpus := qty(strconv.FormatInt(pods, 10))
		if err := s.UpsertNodes(seq, structs.NodeInfo{Cluster: "c1", Name: "b",
			Allocatable:         corev1.ResourceList{"cpu": qty("4"), "nvidia.com/gpu": qty("4")},
			Requested:           corev1.ResourceList{"nvidia.com/gpu": gpus},
			PodsByWorkload:      map[string]int64{label: pods},
			RequestedByWorkload: map[string]corev1.ResourceList{label: {"nvidia.com/gpu": gpus, "pods": qty(strconv.FormatInt(pods, 10))}}}); err != nil {
			t.Fatal(err)
		}
	}
	running(4, 2)
	plan := placeOn(wl, s.Snapshot(), "b")
	plan.Decisions[0].Assignments[0].Pods = 3 // 2 running and 1 more
	if err := s.ApplyPlan(5, time.Unix(1000, 0), plan); err != nil {
		t.Fatalf("apply: %v", err)
	}
	snap := s.Snapshot()
	gpu := gpuIndex(t, snap)
	reservations := snap.ReservationsOf(wl.ID)
	if len(reservations) != 1 || reservations[0].On("c1", "b") == nil {
		t.Fatalf("reservations = %+v, want one on b", reservations)
	}
	if on := reservations[0].On("c1", "b"); on.Request.Get(gpu) != 1 || on.Pods != 3 {
		t.Errorf("reservation on b holds %d GPUs for %d pods, want 1 GPU (2 of 3 pods run) for 3", on.Request.Get(gpu), on.Pods)
	}
	if free := snap.Capacity("c1").Node("b").Free.Get(gpu); free != 1 {
		t.Errorf("free gpu on b = %d, want 4 − 2 running − 1 reserved = 1", free)
	}
	running(6, 3)
	if n := len(s.Snapshot().ReservationsOf(wl.ID)); n != 0 {
		t.Errorf("%d reservations left once the three pods run, want none", n)
	}
}

// TestApplyPlanRejectsStale: a decision for an older generation, or one that would over-commit a node, is refused
// and leaves the store unchanged.
func TestApplyPlanRejectsStale(t *testing.T) {
	s := newTestStore(t)
	wl := addWorkload(t, s, 3, "job", "4")
	plan := placeOn(wl, s.Snapshot(), "a") // a has only 2 GPUs free
	if err := s.ApplyPlan(4, time.Unix(0, 0), plan); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("over-committing plan: err = %v, want ErrStalePlan", err)
	}
	if n := len(s.Snapshot().ReservationsOf(wl.ID)); n != 0 {
		t.Errorf("rejected plan left %d reservations", n)
	}
	plan = placeOn(wl, s.Snapshot(), "b")
	if _, err := s.UpsertWorkload(5, structs.WorkloadInfo{Generation: 2, Analysis: wl.Analysis}); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyPlan(6, time.Unix(0, 0), plan); !errors.Is(err, ErrStalePlan) {
		t.Fatalf("plan for generation 1 of a generation-2 workload: err = %v, want ErrStalePlan", err)
	}
}

// TestSnapshotsAreIsolated: a snapshot keeps seeing the fleet as it was when taken.
func TestSnapshotsAreIsolated(t *testing.T) {
	s := newTestStore(t)
	before := s.Snapshot()
	if err := s.DeleteCluster(3, "c1"); err != nil {
		t.Fatal(err)
	}
	if before.Capacity("c1") == nil || len(before.Nodes("c1")) != 3 {
		t.Errorf("old snapshot lost the cluster")
	}
	after := s.Snapshot()
	if after.Capacity("c1") != nil || len(after.Nodes("c1")) != 0 || after.Cluster("c1") != nil {
		t.Errorf("deleted cluster still visible")
	}
}

// TestPoliciesFollowWrites: the policy list a snapshot hands out is sorted by name, follows upserts and deletes,
// and an older snapshot keeps the list it was taken with.
func TestPoliciesFollowWrites(t *testing.T) {
	s := newTestStore(t)
	upsert := func(seq uint64, name string, priority int32) {
		t.Helper()
		sp := &v1alpha1.SchedulePolicy{Spec: v1alpha1.SchedulePolicySpec{Priority: priority}}
		sp.Name = name
		p, err := policy.Compile(sp, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertPolicy(seq, p); err != nil {
			t.Fatal(err)
		}
	}
	names := func(snap *Snapshot) []string {
		var out []string
		for _, p := range snap.Policies() {
			out = append(out, fmt.Sprintf("%s@%d", p.Name, p.ModifyIndex))
		}
		return out
	}
	upsert(10, "serving", 5)
	upsert(11, "batch", 1)
	first := s.Snapshot()
	upsert(12, "serving", 7)
	if err := s.DeletePolicy(13, "batch"); err != nil {
		t.Fatal(err)
	}
	if got, want := names(first), []string{"batch@11", "serving@10"}; !slices.Equal(got, want) {
		t.Errorf("policies of the first snapshot = %v, want %v", got, want)
	}
	if got, want := names(s.Snapshot()), []string{"serving@12"}; !slices.Equal(got, want) {
		t.Errorf("policies after the update and delete = %v, want %v", got, want)
	}
	// The policy writes stamp the policies table only; newTestStore last wrote nodes at 2.
	for table, want := range map[string]uint64{TablePolicies: 13, TableNodes: 2, TableWorkloads: 0, "no-such-table": 0} {
		if got := s.Snapshot().TableIndex(table); got != want {
			t.Errorf("TableIndex(%s) = %d, want %d", table, got, want)
		}
	}
	if got := first.TableIndex(TablePolicies); got != 11 {
		t.Errorf("TableIndex(%s) of the first snapshot = %d, want 11", TablePolicies, got)
	}
}

// TestReservationTravelsWithItsWorkload: a reservation lives in its workload, so a new generation of the workload
// keeps it until a decision replaces it, and a node reporting the workload's pod drops that node only, leaving
// what the reservation holds elsewhere.
func TestReservationTravelsWithItsWorkload(t *testing.T) {
	s := newTestStore(t)
	wl := addWorkload(t, s, 3, "job", "1")
	snap := s.Snapshot()
	plan := placeOn(wl, snap, "a")
	d := plan.Decisions[0]
	d.Assignments = append(d.Assignments, structs.Assignment{Cluster: "c1", Node: "b", Component: "worker", Pods: 1,
		PodRequest: wl.PodGroups[0].Request})
	if err := s.ApplyPlan(4, time.Unix(0, 0), plan); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertWorkload(5, structs.WorkloadInfo{Generation: 2, Analysis: wl.Analysis}); err != nil {
		t.Fatal(err)
	}
	held := s.Snapshot().ReservationsOf(wl.ID)
	if len(held) != 1 || held[0].ID != d.ID || len(held[0].Nodes) != 2 {
		t.Fatalf("after a new generation the workload holds %+v, want decision %s's reservation on a and b", held, d.ID)
	}

	// a reports the workload's pod: a no longer lists the workload, b still does and keeps its GPU reserved.
	if err := s.UpsertNodes(6, structs.NodeInfo{Cluster: "c1", Name: "a",
		Allocatable:    corev1.ResourceList{"cpu": qty("8"), "nvidia.com/gpu": qty("8")},
		Requested:      corev1.ResourceList{"cpu": qty("1500m"), "nvidia.com/gpu": qty("7")},
		PodsByWorkload: map[string]int64{structs.WorkloadLabelValue(wl.ID): 1}}); err != nil {
		t.Fatal(err)
	}
	snap = s.Snapshot()
	gpu := gpuIndex(t, snap)
	row := snap.Capacity("c1")
	if got := row.Node("a").ReservedBy; len(got) != 0 {
		t.Errorf("a lists reserving workloads %v after reporting the pod, want none", got)
	}
	if got := row.Node("b").ReservedBy; !slices.Equal(got, []string{wl.ID}) {
		t.Errorf("b lists reserving workloads %v, want [%s]", got, wl.ID)
	}
	// By hand: b has 4 GPUs, nothing requested, 1 still reserved.
	if free := row.Node("b").Free.Get(gpu); free != 3 {
		t.Errorf("free gpu on b = %d, want 3", free)
	}
	if on := snap.ReservationsOn("c1", "b"); len(on) != 1 || len(on[0].Nodes) != 1 || on[0].Nodes[0].Node != "b" {
		t.Errorf("reservations on b = %+v, want the workload's, reduced to b", on)
	}
	if on := snap.ReservationsOn("c1", "a"); len(on) != 0 {
		t.Errorf("reservations on a = %+v, want none", on)
	}
}

// TestExpiryNeverSkipsADueReservation: ExpireReservations skips its scan until the earliest reservation may be
// due, and a reservation made later with an earlier expiry (a plan stamped with an older clock) moves that
// point, so it still expires on time. The TTL is a minute (newTestStore).
func TestExpiryNeverSkipsADueReservation(t *testing.T) {
	s := newTestStore(t)
	first := addWorkload(t, s, 3, "first", "1")
	if err := s.ApplyPlan(4, time.Unix(100, 0), placeOn(first, s.Snapshot(), "b")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ExpireReservations(5, time.Unix(130, 0)); err != nil || n != 0 {
		t.Fatalf("expiry at 130s released %d (%v), want 0: the first reservation runs to 160s", n, err)
	}
	second := addWorkload(t, s, 6, "second", "1")
	if err := s.ApplyPlan(7, time.Unix(80, 0), placeOn(second, s.Snapshot(), "b")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ExpireReservations(8, time.Unix(145, 0)); err != nil || n != 1 {
		t.Fatalf("expiry at 145s released %d (%v), want 1: the second reservation ran out at 140s", n, err)
	}
	if len(s.Snapshot().ReservationsOf(second.ID)) != 0 || len(s.Snapshot().ReservationsOf(first.ID)) != 1 {
		t.Errorf("after expiry at 145s: second holds %v, first holds %v; want only the first's",
			s.Snapshot().ReservationsOf(second.ID), s.Snapshot().ReservationsOf(first.ID))
	}
	if n, err := s.ExpireReservations(9, time.Unix(160, 0)); err != nil || n != 1 {
		t.Fatalf("expiry at 160s released %d (%v), want the first reservation", n, err)
	}
}

// TestNodesOfAClusterOnly: a cluster's nodes are found by their id prefix, so a cluster whose name starts
// with another's ("c1" and "c10") must not lend it its nodes, neither to Nodes nor to its capacity row.
func TestNodesOfAClusterOnly(t *testing.T) {
	s := newTestStore(t)
	if err := s.UpsertCluster(3, &structs.Cluster{Name: "c10", Ready: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertNodes(4, structs.NodeInfo{Cluster: "c10", Name: "a", Allocatable: corev1.ResourceList{"cpu": qty("32")}},
		structs.NodeInfo{Cluster: "c10", Name: "z", Allocatable: corev1.ResourceList{"cpu": qty("32")}}); err != nil {
		t.Fatal(err)
	}
	snap := s.Snapshot()
	names := func(cluster string) []string {
		var out []string
		for _, n := range snap.Nodes(cluster) {
			out = append(out, n.Name)
		}
		return out
	}
	// newTestStore gives c1 the nodes a, b and cordoned, sorted by name.
	if got := names("c1"); !slices.Equal(got, []string{"a", "b", "cordoned"}) {
		t.Errorf("nodes of c1 = %v, want [a b cordoned]", got)
	}
	if got := names("c10"); !slices.Equal(got, []string{"a", "z"}) {
		t.Errorf("nodes of c10 = %v, want [a z]", got)
	}
	if got := names("c"); len(got) != 0 {
		t.Errorf("nodes of c = %v, want none", got)
	}
	for _, c := range snap.Capacities() {
		if want := map[string]int{"c1": 3, "c10": 2}[c.Name]; c.NodeCount != want {
			t.Errorf("capacity row of %s counts %d nodes, want %d", c.Name, c.NodeCount, want)
		}
	}
}

// TestUpsertWorkloadAndPlanIsOneWrite: a workload's new version and the plan made on a view holding it are
// written together, the plan seeing the version and reserving as ApplyPlan does; when the plan fails or does
// not apply, neither is written.
func TestUpsertWorkloadAndPlanIsOneWrite(t *testing.T) {
	info := func(name, gpus string) structs.WorkloadInfo {
		one := int64(1)
		return structs.WorkloadInfo{Generation: 1, Analysis: &karta.Analysis{
			APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ml", Name: name,
			Components: []karta.ComponentInstance{{Name: "worker", Replicas: &one, Pods: 1,
				PodRequests: corev1.ResourceList{"nvidia.com/gpu": qty(gpus)}}}}}
	}
	failed := errors.New("the cycle failed")
	cases := []struct {
		name    string
		gpus    string
		node    string
		fail    bool
		wantErr error
	}{
		{name: "fits on b", gpus: "2", node: "b"},
		{name: "over-commits a", gpus: "4", node: "a", wantErr: ErrStalePlan},
		{name: "the cycle fails", gpus: "1", node: "b", fail: true, wantErr: failed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			before := s.Snapshot().Index()
			var seen *structs.Workload
			plan, err := s.UpsertWorkloadAndPlan(3, time.Unix(1000, 0), info("job", tc.gpus), func(view *Snapshot) (*structs.Plan, error) {
				seen = view.Workload(structs.WorkloadID("kubeflow.org/v1", "PyTorchJob", "ml", "job"))
				if seen == nil {
					return nil, errors.New("the view does not hold the new version")
				}
				if tc.fail {
					return nil, failed
				}
				return placeOn(seen, view, tc.node), nil
			})
			snap := s.Snapshot()
			stored := snap.Workload(structs.WorkloadID("kubeflow.org/v1", "PyTorchJob", "ml", "job"))
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if stored != nil || snap.Index() != before {
					t.Errorf("a failed write left the workload %v at index %d (was %d)", stored, snap.Index(), before)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if seen == nil || seen.ModifyIndex != 3 || len(plan.Decisions) != 1 {
				t.Fatalf("the plan saw %+v and made %d decisions", seen, len(plan.Decisions))
			}
			if stored == nil || stored.Placement == nil || len(snap.ReservationsOf(stored.ID)) != 1 || snap.Index() != 3 {
				t.Fatalf("stored %+v with %d reservations at index %d, want it placed and reserving, at 3",
					stored, len(snap.ReservationsOf(stored.ID)), snap.Index())
			}
			// b had 4 free GPUs; the plan reserved 2 of them.
			if free := snap.Capacity("c1").Node("b").Free.Get(gpuIndex(t, snap)); free != 2 {
				t.Errorf("free gpu on b = %d, want 2", free)
			}
		})
	}
}

// TestWorkloadAskingPastWhatIsCountedIsRefused: a workload whose pods ask, in all, for more than structs.MaxDemand
// of a resource is refused with an error naming it, its component and the resource, instead of a total that
// wraps around to a negative demand; as is a pod asking for more than karta.Largest.
func TestWorkloadAskingPastWhatIsCountedIsRefused(t *testing.T) {
	cases := []struct {
		name     string
		pods     int64
		requests corev1.ResourceList
		want     string
	}{
		{"many large pods", 1 << 20, corev1.ResourceList{"memory": qty("1Pi")}, "1048576 pods asking for 1Pi memory each"},
		{"pod count past int64 when summed", 1 << 62, corev1.ResourceList{"cpu": qty("1")}, "cpu each are more than fleetflow counts"},
		{"one pod past the limit", 1, corev1.ResourceList{"memory": qty("2Pi")}, "resource memory: 2Pi is more than fleetflow counts (1Pi)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			_, err := s.UpsertWorkload(2, structs.WorkloadInfo{Generation: 1, Analysis: &karta.Analysis{
				APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ml", Name: "huge",
				Components: []karta.ComponentInstance{{Name: "worker", Pods: tc.pods, PodRequests: tc.requests}}}})
			if err == nil || !strings.Contains(err.Error(), "huge") || !strings.Contains(err.Error(), "component worker") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Fatalf("UpsertWorkload error = %v, want one naming the workload, its component and %q", err, tc.want)
			}
			if wl := s.Snapshot().Workload(structs.WorkloadID("kubeflow.org/v1", "PyTorchJob", "ml", "huge")); wl != nil {
				t.Errorf("the refused workload was stored: %+v", wl)
			}
		})
	}
}

// TestExclusiveUnitsByPodGroup: a workload's exclusive units refer to its pod groups by index, and units that
// name pods the workload does not have are refused, naming the workload and the component.
func TestExclusiveUnitsByPodGroup(t *testing.T) {
	unit := func(pods ...karta.UnitPods) karta.ExclusiveUnit {
		return karta.ExclusiveUnit{TopologyKey: "rack", Pods: pods}
	}
	cases := []struct {
		name  string
		units []karta.ExclusiveUnit
		want  []structs.ExclusiveUnit
		err   string
	}{
		{name: "two units", units: []karta.ExclusiveUnit{
			unit(karta.UnitPods{Component: "leader", Pods: 1}, karta.UnitPods{Component: "worker", Instance: "a", Pods: 2}),
			unit(karta.UnitPods{Component: "leader", Pods: 1}, karta.UnitPods{Component: "worker", Instance: "a", Pods: 2})},
			want: []structs.ExclusiveUnit{
				{TopologyKey: "rack", Pods: []structs.UnitPods{{Group: 0, Count: 1}, {Group: 1, Count: 2}}},
				{TopologyKey: "rack", Pods: []structs.UnitPods{{Group: 0, Count: 1}, {Group: 1, Count: 2}}}}},
		{name: "unknown component", units: []karta.ExclusiveUnit{unit(karta.UnitPods{Component: "worker", Pods: 1})},
			err: `an exclusive-topology unit names 1 pods of "worker", which it does not have`},
		{name: "more pods than the group", units: []karta.ExclusiveUnit{unit(karta.UnitPods{Component: "leader", Pods: 3})},
			err: `its exclusive-topology units hold 3 pods of "leader", which has 2`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			wl, err := s.UpsertWorkload(2, structs.WorkloadInfo{Generation: 1, Analysis: &karta.Analysis{
				APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Namespace: "ml", Name: "lws",
				Components:     []karta.ComponentInstance{{Name: "leader", Pods: 2}, {Name: "worker", Instance: "a", Pods: 4}},
				ExclusiveUnits: tc.units}})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), "LeaderWorkerSet/ml/lws") || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("UpsertWorkload error = %v, want one naming the workload and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(wl.ExclusiveUnits, tc.want) {
				t.Errorf("ExclusiveUnits = %+v, want %+v", wl.ExclusiveUnits, tc.want)
			}
		})
	}
}

// TestPlacementRecordsWhenItWasDecided: a placement carries the sequence and time of the plan that made it,
// through later writes of the same workload that keep it, and a new decision replaces both.
func TestPlacementRecordsWhenItWasDecided(t *testing.T) {
	s := newTestStore(t)
	wl := addWorkload(t, s, 3, "job", "1")
	if err := s.ApplyPlan(4, time.Unix(1000, 0), placeOn(wl, s.Snapshot(), "b")); err != nil {
		t.Fatalf("apply: %v", err)
	}
	check := func(step string, wantIndex uint64, wantAt time.Time) {
		t.Helper()
		p := s.Snapshot().Workload(wl.ID).Placement
		if p == nil {
			t.Fatalf("%s: not placed", step)
		}
		if p.DecidedIndex != wantIndex || p.DecidedAt != wantAt.UnixNano() {
			t.Errorf("%s: decided at sequence %d, time %d; want %d, %d", step, p.DecidedIndex, p.DecidedAt,
				wantIndex, wantAt.UnixNano())
		}
	}
	check("placed", 4, time.Unix(1000, 0))
	if _, err := s.UpsertWorkload(5, structs.WorkloadInfo{Analysis: wl.Analysis, Generation: 1}); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	check("same workload written again", 4, time.Unix(1000, 0))
	if err := s.ApplyPlan(6, time.Unix(2000, 0), placeOn(wl, s.Snapshot(), "b")); err != nil {
		t.Fatalf("apply again: %v", err)
	}
	check("placed again", 6, time.Unix(2000, 0))
}
