package scheduler

import (
	"time"

	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// StorePlanner applies plans straight to a store, for simulation, benchmarks and tests: the in-process stand-in
// for the pipeline, which publishes decisions and applies them when they come back from the stream.
type StorePlanner struct {
	Store *state.Store
	// NextSeq returns the stream sequence to record the plan under.
	NextSeq func() uint64
	// Now returns the time reservations are made at.
	Now func() time.Time
	// Plans records every plan applied, in order.
	Plans []*structs.Plan
}

// SubmitPlan implements Planner.
func (p *StorePlanner) SubmitPlan(plan *structs.Plan) (State, error) {
	err := p.Store.ApplyPlan(p.NextSeq(), p.Now(), plan)
	if err == nil {
		p.Plans = append(p.Plans, plan)
	}
	return p.Store.Snapshot(), err
}
