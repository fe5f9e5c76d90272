package lifecycle

import "github.com/fleetflow/fleetflow/schemas"

// Copy is where one copy of a workload stands on one cluster, as the controller last decided and heard of it.
type Copy struct {
	Cluster string
	// Action and Sequence are the last decision published for the cluster.
	Action   schemas.DecisionAction
	Sequence uint64
	// Confirmed is the sequence of the last decision the cluster's applier reported applied, 0 when none.
	Confirmed uint64
	// Failed is the API error of the Apply the cluster's applier gave up on, while that Apply is the last
	// decision published for the cluster; "" when none.
	Failed string
}

// Copies lists, by cluster name, the copies of the workload id the controller published decisions for.
func (p *Controller) Copies(id string) []Copy {
	if p.workloads[id] == nil {
		return nil
	}
	var copies []Copy
	for _, c := range p.publishedOn(id) {
		failed := ""
		if c.Failed.Sequence != 0 {
			failed = c.Failed.Err
		}
		copies = append(copies, Copy{Cluster: c.Cluster, Action: schemas.DecisionAction(c.Published.Action),
			Sequence: c.Published.Sequence, Confirmed: c.Confirmed, Failed: failed})
	}
	return copies
}

// WorkloadOfUID is the id of the workload the controller knows by the control-plane uid.
func (p *Controller) WorkloadOfUID(uid string) (string, bool) {
	id, ok := p.byUID[uid]
	return id, ok
}

// Tracking is how many workloads the controller keeps bookkeeping for: those the control plane holds, and the
// deleted ones whose copies' Deletes are not all sent.
func (p *Controller) Tracking() int { return len(p.workloads) }

// AwaitingRedelivery is how many aborted events the controller keeps what they touched for, until they are
// redelivered or forgotten (ForgetThrough).
func (p *Controller) AwaitingRedelivery() int { return len(p.txn.redo) }

// Tracks reports whether the controller keeps bookkeeping for the workload id (see Tracking).
func (p *Controller) Tracks(id string) bool { return p.workloads[id] != nil }

// Leaving reports whether the workload id is among those the tick moves off clusters whose applier gave up on
// its Apply.
func (p *Controller) Leaving(id string) bool {
	_, ok := p.leaving[id]
	return ok
}
