package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// TestChunksMatchFullRebuild grows a cluster node by node in random order (so chunks split), removes some,
// reserves on others, and checks that the incrementally maintained capacity row equals one rebuilt from scratch:
// same nodes in name order, no chunk over its limit, and the same sums and maxima.
func TestChunksMatchFullRebuild(t *testing.T) {
	s, err := NewStore(Config{})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(0)
	next := func() uint64 { seq++; return seq }
	if err := s.UpsertCluster(next(), &structs.Cluster{Name: "c1", Ready: true}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	order := r.Perm(400)
	for _, i := range order {
		cpu := fmt.Sprint(1 + r.IntN(64))
		if err := s.UpsertNodes(next(), structs.NodeInfo{Cluster: "c1", Name: fmt.Sprintf("n-%03d", i),
			Allocatable: corev1.ResourceList{"cpu": qty(cpu)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range order[:50] {
		if err := s.DeleteNode(next(), "c1", fmt.Sprintf("n-%03d", i)); err != nil {
			t.Fatal(err)
		}
	}
	wl := addWorkload(t, s, next(), "job", "0")
	plan := placeOn(wl, s.Snapshot(), fmt.Sprintf("n-%03d", order[60]))
	if err := s.ApplyPlan(next(), time.Unix(0, 0), plan); err != nil {
		t.Fatal(err)
	}

	incremental := s.Snapshot().Capacity("c1")
	// A cluster upsert with no chunk change, then a forced full rebuild of the same nodes for comparison.
	var full *structs.ClusterCapacity
	if err := s.write(next(), func(w *writeTxn) error {
		w.markCluster("c1")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	full = s.Snapshot().Capacity("c1")

	var names []string
	for nc := range incremental.All() {
		names = append(names, nc.Node.Name)
	}
	if !slices.IsSorted(names) || len(names) != 350 || incremental.NodeCount != 350 {
		t.Fatalf("incremental row holds %d nodes (count %d), sorted %v; want 350 sorted", len(names),
			incremental.NodeCount, slices.IsSorted(names))
	}
	for _, ch := range incremental.Chunks {
		if len(ch.Nodes) == 0 || len(ch.Nodes) > structs.MaxChunkNodes {
			t.Errorf("chunk of %d nodes, want 1..%d", len(ch.Nodes), structs.MaxChunkNodes)
		}
	}
	for i := range s.Snapshot().Resources().Len() {
		if incremental.Free.Get(i) != full.Free.Get(i) || incremental.Allocatable.Get(i) != full.Allocatable.Get(i) ||
			incremental.MaxFree.Get(i) != full.MaxFree.Get(i) {
			t.Errorf("resource %d: incremental free %d alloc %d max %d, full %d %d %d", i,
				incremental.Free.Get(i), incremental.Allocatable.Get(i), incremental.MaxFree.Get(i),
				full.Free.Get(i), full.Allocatable.Get(i), full.MaxFree.Get(i))
		}
	}
	node := fmt.Sprintf("n-%03d", order[60])
	if got, want := incremental.Node(node).Reserved, full.Node(node).Reserved; !slices.Equal(got, want) {
		t.Errorf("reserved on %s: incremental %v, full %v", node, got, want)
	}
}

// TestChunkMemosAcrossWrites: a reservation copies the chunk holding the node but keeps the Node objects, so
// what was memoized from the nodes carries over and what was memoized from free capacity does not; a node
// update replaces a Node object, so the copy of its chunk starts with no memo at all.
func TestChunkMemosAcrossWrites(t *testing.T) {
	s := newTestStore(t)
	chunk := func() *structs.NodeChunk { return s.Snapshot().Capacity("c1").Chunks[0] }
	computed := 0
	fromNodes := func() any { computed++; return "from nodes" }
	fromFree := func() any { computed++; return "from free" }
	before := chunk()
	before.NodeMemo("k", fromNodes)
	before.FreeMemo("k", fromFree)
	if computed != 2 {
		t.Fatalf("first reads computed %d values, want 2", computed)
	}

	wl := addWorkload(t, s, 10, "job", "1")
	if err := s.ApplyPlan(11, time.Unix(0, 0), placeOn(wl, s.Snapshot(), "b")); err != nil {
		t.Fatal(err)
	}
	reserved := chunk()
	if reserved == before {
		t.Fatal("the reservation did not copy the chunk holding its node")
	}
	if got := reserved.NodeMemo("k", fromNodes); got != "from nodes" || computed != 2 {
		t.Errorf("node memo after a reservation = %v with %d computations, want the inherited value and 2", got, computed)
	}
	if reserved.FreeMemo("k", fromFree); computed != 3 {
		t.Errorf("free memo after a reservation was not recomputed (%d computations, want 3)", computed)
	}

	if err := s.UpsertNodes(12, structs.NodeInfo{Cluster: "c1", Name: "b",
		Allocatable: corev1.ResourceList{"cpu": qty("4"), "nvidia.com/gpu": qty("4")},
		Labels:      map[string]string{"new": "label"}}); err != nil {
		t.Fatal(err)
	}
	if chunk().NodeMemo("k", fromNodes); computed != 4 {
		t.Errorf("node memo after a node update was not recomputed (%d computations, want 4)", computed)
	}
}

// TestApplyReservationOps: the ops apply in order to a sorted list, so a reservation dropped and recorded again
// in one write (a plan replayed onto its own placement) stays listed, and the input list is never modified.
func TestApplyReservationOps(t *testing.T) {
	cases := []struct {
		name string
		ids  []string
		ops  []reservationOp
		want []string
	}{
		{"no ops", []string{"a"}, nil, []string{"a"}},
		{"added in order", []string{"a", "c"}, []reservationOp{{"b", true}}, []string{"a", "b", "c"}},
		{"removed", []string{"a", "b"}, []reservationOp{{"a", false}}, []string{"b"}},
		{"removed then added again", []string{"a"}, []reservationOp{{"a", false}, {"a", true}}, []string{"a"}},
		{"added then removed", nil, []reservationOp{{"x", true}, {"x", false}}, []string{}},
		{"removing an absent one is a no-op", []string{"a"}, []reservationOp{{"z", false}}, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.ids)
			got := applyReservationOps(tc.ids, tc.ops)
			if len(got) != len(tc.want) || (len(got) > 0 && !slices.Equal(got, tc.want)) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if !slices.Equal(tc.ids, before) {
				t.Errorf("input changed to %v, was %v", tc.ids, before)
			}
		})
	}
}
