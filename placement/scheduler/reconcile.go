package scheduler

import (
	"fmt"
	"slices"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Reevaluate runs a cycle for each placed workload in ids, on a view updated after each one, and returns the
// decisions whose placement must change: moves (with the other members of a group that moves together),
// placed workloads that now fit nowhere, and workloads that another policy now governs where they run.
// Workloads that still fit where they are produce nothing, except that the Widenable ones among them are
// returned apart (not submitted), so the caller can retry them when an event could admit them where they
// were rejected. Each returned decision has been submitted to the planner.
func (s *Scheduler) Reevaluate(st State, planner Planner, ids []string) (moves, widenable []*structs.Decision, err error) {
	for _, id := range ids {
		wl := st.Workload(id)
		if wl == nil || wl.Placement == nil {
			continue
		}
		plan, err := s.Schedule(st, id)
		if err != nil {
			return moves, widenable, err
		}
		d := plan.Decisions[0]
		// A policy that took the workload over where it runs is recorded, so its rules (rescheduleOnFailure,
		// holding Duplicate copies) apply from now on.
		takenOver := d.Status == structs.StatusPlaced && d.Policy != wl.Placement.Policy
		if !d.IsMove() && !takenOver {
			if d.Widenable {
				widenable = append(widenable, d)
			}
			continue
		}
		// Members of the workload's group that leave with it; unplaced members are placed by their own cycles.
		kept := []*structs.Decision{d}
		for _, other := range plan.Decisions[1:] {
			if other.IsMove() {
				kept = append(kept, other)
			}
		}
		plan.Decisions = kept
		next, err := planner.SubmitPlan(plan)
		if next != nil {
			st = next
		}
		if err != nil {
			return moves, widenable, fmt.Errorf("scheduler: submit move of %s: %w", id, err)
		}
		moves = append(moves, plan.Decisions...)
	}
	return moves, widenable, nil
}

// AffectedByCluster lists the workloads to re-evaluate when a cluster changes or goes away: those placed on it.
func AffectedByCluster(st State, cluster string) []string {
	var ids []string
	for _, wl := range st.WorkloadsOn(cluster) {
		ids = append(ids, wl.ID)
	}
	return ids
}

// AffectedByClusterChange lists the workloads to re-evaluate when a cluster changed (labels, taints, installed
// APIs, readiness): the ones placed on it, which may have to leave, and, sorted after them, the placed
// Duplicate workloads that lack a copy there, which a cluster that became Ready or eligible widens onto.
// Without those, a framework's CRDs copied by level 1 would never reach a cluster that joined the fleet, or
// came back, after the copy was placed.
func AffectedByClusterChange(st State, cluster string) []string {
	ids := AffectedByCluster(st, cluster)
	duplicates := map[string]bool{}
	for _, p := range st.Policies() {
		if sc := p.Spec.SpreadConstraints; sc != nil && sc.SpreadMode == v1alpha1.SpreadModeDuplicate {
			duplicates[p.Name] = true
		}
	}
	if len(duplicates) == 0 {
		return ids
	}
	var widen []string
	for _, wl := range st.Workloads() {
		if wl.Placement != nil && duplicates[wl.Placement.Policy] && !slices.Contains(wl.Placement.Clusters, cluster) {
			widen = append(widen, wl.ID)
		}
	}
	slices.Sort(widen)
	return append(ids, widen...)
}

// AffectedByPolicy lists the workloads to re-evaluate when a policy changes: every placed workload, because a
// changed selector or priority can hand a workload to another policy.
func AffectedByPolicy(st State) []string {
	var ids []string
	for _, wl := range st.Workloads() {
		if wl.Placement != nil {
			ids = append(ids, wl.ID)
		}
	}
	slices.Sort(ids)
	return ids
}
