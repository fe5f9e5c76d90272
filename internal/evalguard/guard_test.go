package evalguard

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestRecordOutlivesAProcessThatDiesEvaluating: an evaluation entered and never left (the process died in it)
// is found by the next Open, and only it, and stays refused by the Opens after, whatever stopped cleanly in
// between; an evaluation left, or a record closed cleanly, leaves nothing.
func TestRecordOutlivesAProcessThatDiesEvaluating(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ri-evaluations")
	first, left, err := Open(path)
	if err != nil || len(left) != 0 {
		t.Fatalf("a new record: %v left behind, error %v", left, err)
	}
	first.Enter("done@1")()
	first.Enter("bomb@2") // the process dies here: never left, never closed

	second, left, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(left, []string{"bomb@2"}) {
		t.Errorf("left behind %v, want [bomb@2]", left)
	}
	leave := second.Enter("slow@3") // a clean stop during an evaluation
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	leave()
	third, refused, err := Open(path)
	if err != nil || !slices.Equal(refused, []string{"bomb@2"}) {
		t.Errorf("after a clean stop and a fresh open: refused %v, error %v; want bomb@2 still refused, slow@3 not", refused, err)
	}
	_ = third.Close()
}

// TestEveryConcurrentEvaluationIsRecorded: evaluations in progress together take slots of their own.
func TestEveryConcurrentEvaluationIsRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ri-evaluations")
	g, _, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g.Enter("placer@1")
	g.Enter("status@2")
	_, left, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"placer@1", "status@2"}) {
		t.Errorf("left behind %v, want both", left)
	}
}
