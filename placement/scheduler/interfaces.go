package scheduler

import (
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// State is an immutable view of the fleet; *state.Snapshot implements it. Objects it returns are constants.
type State interface {
	// Index is the stream sequence of the view; decisions carry it.
	Index() uint64
	Resources() *structs.ResourceTable
	// Capacities returns every registered cluster's capacity row, sorted by cluster name.
	Capacities() []*structs.ClusterCapacity
	Namespace(name string) *structs.Namespace
	Workload(id string) *structs.Workload
	Workloads() []*structs.Workload
	WorkloadsOn(cluster string) []*structs.Workload
	// WorkloadsOfKind returns the workloads of a group and kind in a namespace, placed or not.
	WorkloadsOfKind(group, kind, namespace string) []*structs.Workload
	// WorkloadsOfKindInAllNamespaces returns the workloads of a group and kind in every namespace, placed or not.
	WorkloadsOfKindInAllNamespaces(group, kind string) []*structs.Workload
	Policies() []*policy.Policy
	ReservationsOf(workloadID string) []*structs.Reservation
}

// Planner is the write port. SubmitPlan records a plan and returns the view the next cycle must read, which
// includes the plan's reservations. It returns an error wrapping state.ErrStalePlan when the plan no longer holds
// on the latest view; the scheduler then plans again on the returned view.
type Planner interface {
	SubmitPlan(plan *structs.Plan) (State, error)
}
