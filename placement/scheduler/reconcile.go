package scheduler

import (
	"fmt"
	"slices"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// Reevaluate runs a cycle for each placed workload in ids, on a view updated after each one, and returns the
// decisions whose placement must change: moves, and placed workloads that now fit nowhere. Workloads that still
// fit where they are produce nothing. Each returned decision has been submitted to the planner.
func (s *Scheduler) Reevaluate(st State, planner Planner, ids []string) ([]*structs.Decision, State, error) {
	var moves []*structs.Decision
	for _, id := range ids {
		wl := st.Workload(id)
		if wl == nil || wl.Placement == nil {
			continue
		}
		plan, err := s.Schedule(st, id)
		if err != nil {
			return moves, st, err
		}
		d := plan.Decisions[0]
		if !d.IsMove() {
			continue
		}
		plan.Decisions = plan.Decisions[:1]
		next, err := planner.SubmitPlan(plan)
		if next != nil {
			st = next
		}
		if err != nil {
			return moves, st, fmt.Errorf("scheduler: submit move of %s: %w", id, err)
		}
		moves = append(moves, d)
	}
	return moves, st, nil
}

// AffectedByCluster lists the workloads to re-evaluate when a cluster changes or goes away: those placed on it.
func AffectedByCluster(st State, cluster string) []string {
	var ids []string
	for _, wl := range st.WorkloadsOn(cluster) {
		ids = append(ids, wl.ID)
	}
	return ids
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
