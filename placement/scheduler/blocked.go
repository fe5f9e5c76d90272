package scheduler

import (
	"slices"
	"sync"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// EventKind is a kind of fleet change, as far as retrying unschedulable workloads is concerned.
type EventKind int

// Event kinds that can turn "does not fit" into "fits".
const (
	// EventCapacityFreed: a node of Cluster has more free capacity (pods ended, node added or uncordoned,
	// reservations released).
	EventCapacityFreed EventKind = iota + 1
	// EventClusterChanged: Cluster was added, became Ready, or changed labels, taints or installed APIs.
	EventClusterChanged
	// EventPolicyChanged: a policy was added, changed or removed.
	EventPolicyChanged
)

// Event is a fleet change.
type Event struct {
	Kind    EventKind
	Cluster string
}

type blockedEntry struct {
	noPolicy bool
	// widenable marks a placed Duplicate workload that some clusters rejected for capacity
	// (structs.Decision.Widenable).
	widenable bool
	codes     map[string]structs.RejectCode
	decision  *structs.Decision
}

// Blocked holds unschedulable workloads with the reasons they were rejected, and says which to retry on an event.
// Like kube-scheduler's queueing hints, only events that could change a workload's answer wake it: freed capacity
// wakes workloads that some cluster rejected for capacity on that cluster, a changed cluster wakes every
// unschedulable workload (its selector, taints or APIs may now admit them), and a changed policy wakes all.
// It also holds placed Duplicate workloads that some cluster rejected for capacity, which freed capacity on that
// cluster wakes to spread further. It is safe for concurrent use.
type Blocked struct {
	mu      sync.Mutex
	entries map[string]*blockedEntry
}

// NewBlocked returns an empty set.
func NewBlocked() *Blocked { return &Blocked{entries: map[string]*blockedEntry{}} }

// Record files the outcome of a decision: unschedulable and policy-less workloads are blocked, widenable placed
// ones are held for freed capacity, others are dropped.
func (b *Blocked) Record(d *structs.Decision) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case d.Status == structs.StatusUnschedulable:
		b.entries[d.WorkloadID] = &blockedEntry{codes: d.RejectCodes, decision: d}
	case d.Status == structs.StatusNoPolicy:
		b.entries[d.WorkloadID] = &blockedEntry{noPolicy: true, decision: d}
	case d.Status == structs.StatusPlaced && d.Widenable:
		b.entries[d.WorkloadID] = &blockedEntry{widenable: true, codes: d.RejectCodes}
	default:
		delete(b.entries, d.WorkloadID)
	}
}

// Forget drops a workload, e.g. when it is deleted or changed (a changed workload is scheduled anyway).
func (b *Blocked) Forget(workloadID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, workloadID)
}

// Decision returns the decision that blocked a workload, with its per-cluster reasons; nil when not blocked.
func (b *Blocked) Decision(workloadID string) *structs.Decision {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[workloadID]; ok {
		return e.decision
	}
	return nil
}

// Len is the number of blocked workloads, not counting the placed widenable ones.
func (b *Blocked) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, e := range b.entries {
		if !e.widenable {
			n++
		}
	}
	return n
}

// Wake removes and returns, sorted, the workloads the event could make schedulable.
func (b *Blocked) Wake(ev Event) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var woken []string
	for id, e := range b.entries {
		if wakes(e, ev) {
			woken = append(woken, id)
			delete(b.entries, id)
		}
	}
	slices.Sort(woken)
	return woken
}

func wakes(e *blockedEntry, ev Event) bool {
	if e.widenable {
		// A changed cluster or policy re-evaluates placed workloads anyway (AffectedByClusterChange,
		// AffectedByPolicy), which also covers a placer that restarted and never recorded this entry.
		return ev.Kind == EventCapacityFreed && e.codes[ev.Cluster] == structs.RejectCapacity
	}
	switch ev.Kind {
	case EventPolicyChanged:
		return true
	case EventClusterChanged:
		return !e.noPolicy
	case EventCapacityFreed:
		return !e.noPolicy && e.codes[ev.Cluster] == structs.RejectCapacity
	default:
		return false
	}
}
