package lifecycle

import (
	"maps"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// stagedEvent is an event handled since the last Commit, with what it touched, to reconcile again when it is
// redelivered after an Abort.
type stagedEvent struct {
	eventKey
	touched *touchedSet
}

// eventKey identifies an event: its subject and its sequence in the stream.
type eventKey struct {
	subject  string
	sequence uint64
}

// touchedSet collects workloads whose decisions may need publishing after an event, with the cycle
// outcome to report for the ones that were scheduled.
type touchedSet struct {
	ids      map[string]bool
	verdicts map[string]*structs.Decision
	// invalid lists workloads whose analysis failed, with why.
	invalid map[string]string
}

func newTouched() *touchedSet {
	return &touchedSet{ids: map[string]bool{}, verdicts: map[string]*structs.Decision{}, invalid: map[string]string{}}
}

func (t *touchedSet) add(id string) { t.ids[id] = true }

// merge adds what other touched, keeping t's own cycle outcome for a workload both decided.
func (t *touchedSet) merge(other *touchedSet) {
	maps.Copy(t.ids, other.ids)
	for id, d := range other.verdicts {
		if _, ok := t.verdicts[id]; !ok {
			t.verdicts[id] = d
		}
	}
	for id, why := range other.invalid {
		if _, ok := t.invalid[id]; !ok {
			t.invalid[id] = why
		}
	}
}

func (t *touchedSet) decided(d *structs.Decision) {
	t.ids[d.WorkloadID] = true
	t.verdicts[d.WorkloadID] = d
}
