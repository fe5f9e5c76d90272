package state

import (
	"maps"
	"slices"
	"testing"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// copyAt builds a copy row applied at seq.
func copyAt(workload, cluster string, seq uint64) *structs.Copy {
	return &structs.Copy{WorkloadID: workload, Cluster: cluster,
		Published: structs.Published{Action: structs.CopyApply, Sequence: seq}}
}

func newTestLedger(t *testing.T) *Ledger {
	t.Helper()
	l, err := NewLedger()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func clustersOf(copies []*structs.Copy) []string {
	var out []string
	for _, c := range copies {
		out = append(out, c.Cluster)
	}
	return out
}

func workloadsOf(copies []*structs.Copy) []string {
	var out []string
	for _, c := range copies {
		out = append(out, c.WorkloadID)
	}
	return out
}

func TestLedgerListsCopiesInKeyOrder(t *testing.T) {
	l := newTestLedger(t)
	// "a" is a prefix of "ab": a prefix scan of a's copies must not list ab's.
	for _, c := range []*structs.Copy{copyAt("ab", "east", 1), copyAt("a", "west", 2), copyAt("a", "east", 3),
		copyAt("b", "east", 4)} {
		l.PutCopy(c)
	}
	if err := l.Seal(); err != nil {
		t.Fatal(err)
	}
	if got := clustersOf(l.CopiesOf("a")); !slices.Equal(got, []string{"east", "west"}) {
		t.Errorf("CopiesOf(a) = %v, want [east west]", got)
	}
	if got := workloadsOf(l.CopiesOn("east")); !slices.Equal(got, []string{"a", "ab", "b"}) {
		t.Errorf("CopiesOn(east) = %v, want [a ab b]", got)
	}
	if got := l.Copy("a", "west"); got == nil || got.Published.Sequence != 2 {
		t.Errorf("Copy(a, west) = %+v, want sequence 2", got)
	}
	if got := l.Copy("a", "north"); got != nil {
		t.Errorf("Copy(a, north) = %+v, want nil", got)
	}
}

func TestLedgerDropsEmptyCopies(t *testing.T) {
	l := newTestLedger(t)
	l.PutCopy(copyAt("a", "east", 1))
	l.PutCopy(&structs.Copy{WorkloadID: "a", Cluster: "east"})
	if err := l.Seal(); err != nil {
		t.Fatal(err)
	}
	if got := l.CopiesOf("a"); len(got) != 0 {
		t.Errorf("an empty copy stayed: %+v", got)
	}
}

func TestLedgerRollsBack(t *testing.T) {
	tests := []struct {
		name string
		// after ends the second event, which applied a on east again and on west with a new verdict, and its batch.
		after func(t *testing.T, l *Ledger)
		// want is a's sequence on east and west, 0 for no copy.
		want    []uint64
		verdict string
	}{
		{"sealed and committed", func(t *testing.T, l *Ledger) { mustSeal(t, l); l.Commit() }, []uint64{5, 6}, "v2"},
		{"sealed then aborted", func(t *testing.T, l *Ledger) { mustSeal(t, l); l.Abort() }, []uint64{1, 0}, "v1"},
		{"discarded", func(t *testing.T, l *Ledger) { l.Discard() }, []uint64{1, 0}, "v1"},
		{"aborted while open", func(t *testing.T, l *Ledger) { l.Abort() }, []uint64{1, 0}, "v1"},
		{"aborted after a commit", func(t *testing.T, l *Ledger) { mustSeal(t, l); l.Commit(); l.Abort() }, []uint64{5, 6}, "v2"},
		{"aborted twice", func(t *testing.T, l *Ledger) {
			mustSeal(t, l)
			l.Abort()
			l.PutCopy(copyAt("a", "west", 9))
			mustSeal(t, l)
			l.Abort()
		}, []uint64{1, 0}, "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newTestLedger(t)
			l.PutCopy(copyAt("a", "east", 1))
			l.SetVerdict(&Verdict{WorkloadID: "a", Key: "v1"})
			mustSeal(t, l)
			l.Commit()

			l.PutCopy(copyAt("a", "east", 5))
			l.PutCopy(copyAt("a", "west", 6))
			l.SetVerdict(&Verdict{WorkloadID: "a", Key: "v2"})
			tt.after(t, l)

			for i, cluster := range []string{"east", "west"} {
				var got uint64
				if c := l.Copy("a", cluster); c != nil {
					got = c.Published.Sequence
				}
				if got != tt.want[i] {
					t.Errorf("a on %s: sequence %d, want %d", cluster, got, tt.want[i])
				}
			}
			if got := l.Verdict("a"); got != tt.verdict {
				t.Errorf("verdict %q, want %q", got, tt.verdict)
			}
		})
	}
}

func mustSeal(t *testing.T, l *Ledger) {
	t.Helper()
	if err := l.Seal(); err != nil {
		t.Fatal(err)
	}
}

// TestUnplacedByReasonCountsWhatIsCommitted: /metrics reads the verdicts of the last Commit only, so a batch
// whose effects were not stored is never counted; each of a verdict's reasons counts once, and a Placed
// verdict or a forgotten one counts nowhere.
func TestUnplacedByReasonCountsWhatIsCommitted(t *testing.T) {
	l := newTestLedger(t)
	l.SetVerdict(&Verdict{WorkloadID: "a", Key: "1", Unplaced: []string{"Capacity", "Taint"}})
	l.SetVerdict(&Verdict{WorkloadID: "b", Key: "1", Unplaced: []string{"Capacity"}})
	l.SetVerdict(&Verdict{WorkloadID: "c", Key: "1"})
	mustSeal(t, l)
	if got := l.UnplacedByReason(); len(got) != 0 {
		t.Errorf("before Commit: %v, want nothing counted", got)
	}
	l.Commit()
	if got, want := l.UnplacedByReason(), map[string]int{"Capacity": 2, "Taint": 1}; !maps.Equal(got, want) {
		t.Errorf("after Commit: %v, want %v", got, want)
	}

	l.SetVerdict(&Verdict{WorkloadID: "a", Key: "2"})
	l.ForgetVerdict("b")
	mustSeal(t, l)
	l.Abort()
	if got, want := l.UnplacedByReason(), map[string]int{"Capacity": 2, "Taint": 1}; !maps.Equal(got, want) {
		t.Errorf("after an aborted batch: %v, want %v", got, want)
	}
	l.SetVerdict(&Verdict{WorkloadID: "a", Key: "2"})
	l.ForgetVerdict("b")
	mustSeal(t, l)
	l.Commit()
	if got := l.UnplacedByReason(); len(got) != 0 {
		t.Errorf("a placed and b forgotten: %v, want nothing counted", got)
	}
}
