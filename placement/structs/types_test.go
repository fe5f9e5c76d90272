package structs

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

func chunkOf(nodes ...*Node) *NodeChunk {
	ch := &NodeChunk{}
	for _, n := range nodes {
		ch.Nodes = append(ch.Nodes, &NodeCapacity{Node: n})
	}
	return ch
}

// TestNodeChunkMemos: a memo is computed once per key, concurrent readers agree on one value, and only a copy
// over the very same Node objects, in the same order, inherits the node memos (never the free ones).
func TestNodeChunkMemos(t *testing.T) {
	a, b := &Node{Name: "a"}, &Node{Name: "b"}
	ch := chunkOf(a, b)
	calls := 0
	compute := func() any { calls++; return calls }
	if first, again := ch.NodeMemo("k", compute), ch.NodeMemo("k", compute); first != 1 || again != 1 {
		t.Errorf("NodeMemo = %v then %v, want the first value twice", first, again)
	}
	if other := ch.NodeMemo("other", compute); other != 2 {
		t.Errorf("NodeMemo under another key = %v, want a fresh computation (2)", other)
	}
	if free := ch.FreeMemo("k", compute); free != 3 {
		t.Errorf("FreeMemo = %v, want its own computation (3): the two memos do not share keys", free)
	}

	var wg sync.WaitGroup
	results := make([]any, 8)
	fresh := chunkOf(a, b)
	for i := range results {
		wg.Go(func() { results[i] = fresh.NodeMemo("k", func() any { return new(int) }) })
	}
	wg.Wait()
	for _, r := range results {
		if r != results[0] {
			t.Fatalf("concurrent readers got different values %p and %p", r, results[0])
		}
	}

	cases := []struct {
		name    string
		copy    *NodeChunk
		inherit bool
	}{
		{"same nodes", chunkOf(a, b), true},
		{"a node replaced", chunkOf(a, &Node{Name: "b"}), false},
		{"a node removed", chunkOf(a), false},
		{"same nodes reordered", chunkOf(b, a), false},
	}
	// A copy and its original share inherited memos, but what either adds later stays its own.
	heir := chunkOf(a, b)
	heir.InheritNodeMemos(ch)
	heir.NodeMemo("heir only", func() any { return "heir" })
	ch.NodeMemo("original only", func() any { return "original" })
	if got := ch.NodeMemo("heir only", func() any { return "absent" }); got != "absent" {
		t.Errorf("the original sees %v under a key only its copy added", got)
	}
	if got := heir.NodeMemo("original only", func() any { return "absent" }); got != "absent" {
		t.Errorf("the copy sees %v under a key only the original added after the copy", got)
	}
	if got := heir.NodeMemo("k", func() any { return "absent" }); got != 1 {
		t.Errorf("the copy lost the inherited memo: %v", got)
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.copy.InheritNodeMemos(ch)
			got := tc.copy.NodeMemo("k", func() any { return "recomputed" })
			if inherited := got == 1; inherited != tc.inherit {
				t.Errorf("NodeMemo after InheritNodeMemos = %v, inherited %v, want %v", got, inherited, tc.inherit)
			}
			if free := tc.copy.FreeMemo("k", func() any { return "recomputed" }); free != "recomputed" {
				t.Errorf("FreeMemo after InheritNodeMemos = %v, want a recomputation", free)
			}
		})
	}
}

// TestNodeChunkMemosStayBounded: workloads with constraints of their own (per-job affinities, hostname pins)
// bring new memo keys without end; a chunk's memos, and what its copies inherit, stay within MaxChunkMemos,
// (MaxChunkFreeMemos for free memos), and a memo that started over still answers every key.
func TestNodeChunkMemosStayBounded(t *testing.T) {
	a, b := &Node{Name: "a"}, &Node{Name: "b"}
	ch := chunkOf(a, b)
	for i := range 10 * MaxChunkMemos {
		key := "selector-" + strconv.Itoa(i)
		if got := ch.NodeMemo(key, func() any { return i }); got != i {
			t.Fatalf("NodeMemo(%s) = %v, want %d", key, got, i)
		}
		ch.FreeMemo(key, func() any { return i })
		// Reservations copy the chunk over the same nodes; the copy inherits and goes on.
		heir := chunkOf(a, b)
		heir.InheritNodeMemos(ch)
		ch = heir
		if len(ch.nodeMemo) > MaxChunkMemos {
			t.Fatalf("after %d keys a chunk holds %d node memos, want at most %d", i+1, len(ch.nodeMemo), MaxChunkMemos)
		}
	}
	fresh := chunkOf(a, b)
	for i := range 10 * MaxChunkMemos {
		fresh.FreeMemo("free-"+strconv.Itoa(i), func() any { return i })
	}
	if len(fresh.freeMemo) > MaxChunkFreeMemos {
		t.Errorf("a chunk holds %d free memos, want at most %d", len(fresh.freeMemo), MaxChunkFreeMemos)
	}
	// The newest key survived the start-over.
	last := "selector-" + strconv.Itoa(10*MaxChunkMemos-1)
	if got := ch.NodeMemo(last, func() any { return "recomputed" }); got != 10*MaxChunkMemos-1 {
		t.Errorf("the newest key was not memoized: %v", got)
	}
}

// TestDecisionIDIsHashOfItsInputs pins DecisionID to its definition, the first 12 bytes of SHA-256 over the
// workload ID, the generation and the snapshot index in decimal, separated by NUL bytes: IDs are persisted in
// reservations and placements, so a rewrite of the function must not change them.
func TestDecisionIDIsHashOfItsInputs(t *testing.T) {
	cases := []struct {
		workload   string
		generation int64
		index      uint64
	}{
		{"kubeflow.org/PyTorchJob/ml/train", 1, 42},
		{"/Pod/default/p", -3, 0},
		{strings.Repeat("long-workload-id/", 40), 1 << 40, 1<<64 - 1},
	}
	for _, tc := range cases {
		sum := sha256.Sum256([]byte(tc.workload + "\x00" + strconv.FormatInt(tc.generation, 10) + "\x00" +
			strconv.FormatUint(tc.index, 10)))
		if got, want := DecisionID(tc.workload, tc.generation, tc.index), hex.EncodeToString(sum[:12]); got != want {
			t.Errorf("DecisionID(%.20q, %d, %d) = %s, want %s", tc.workload, tc.generation, tc.index, got, want)
		}
	}
}

// TestNodeLabelsAnswerAsTheirMap: for any label map, NodeLabels find every key with its value, find no key the
// map lacks, and yield exactly the map's labels, in key order.
func TestNodeLabelsAnswerAsTheirMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := rapid.StringMatching(`[a-z./-]{0,12}`)
		labels := rapid.MapOf(key, rapid.StringMatching(`[a-z0-9]{0,6}`)).Draw(t, "labels")
		l := NewNodeLabels(labels)
		if l.Len() != len(labels) {
			t.Fatalf("Len() = %d, want %d", l.Len(), len(labels))
		}
		for k, v := range labels {
			if got, ok := l.Get(k); !ok || got != v {
				t.Fatalf("Get(%q) = %q, %v; want %q, true", k, got, ok, v)
			}
		}
		probe := key.Draw(t, "probe")
		if _, in := labels[probe]; !in {
			if got, ok := l.Get(probe); ok {
				t.Fatalf("Get(%q) = %q, true for a key the labels lack", probe, got)
			}
		}
		var keys []string
		for k := range l.All() {
			keys = append(keys, k)
		}
		if !slices.IsSorted(keys) {
			t.Fatalf("All() yields keys out of order: %q", keys)
		}
		if back := maps.Collect(l.All()); !maps.Equal(back, labels) {
			t.Fatalf("All() yields %v, want %v", back, labels)
		}
	})
}
