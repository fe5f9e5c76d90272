package scenarios

import (
	"slices"
	"testing"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestPolicyChangeMovesWorkload: kubectl-applying a new version of a policy whose clusterSelector no
// longer matches a workload's cluster moves the workload. A move applies to the new cluster first and
// deletes from the old one only after the new cluster confirmed, so the workload is never nowhere.
//
// Worked out from fleets/policy-change.yaml: follow-region v1 selects region=east, which is only
// cluster-a; v2 selects region=west, only cluster-b, which has room for the small job.
func TestPolicyChangeMovesWorkload(t *testing.T) {
	e := newScenario(t, "testdata/fleets/policy-change.yaml", e2eenv.Options{
		PolicyFiles: []string{"testdata/policies/follow-region-east.yaml"}})
	const ns, name = "moving", "follow-me"
	submit(t, e, PyTorchJob(ns, name, Replicas{Count: 1, CPU: "1", Memory: "2Gi"},
		Replicas{Count: 2, CPU: "2", Memory: "8Gi", GPUs: 1}))
	WaitPlacedOn(t, e, ns, name, "cluster-a")

	submit(t, e, e2eenv.ReadObjects(t, "testdata/policies/follow-region-west.yaml")...)
	// Watch both clusters until the move is done. Reading cluster-a before cluster-b is what makes the
	// "never nowhere" check sound: if the copy is gone from cluster-a, the new one was applied on
	// cluster-b before that, so it is there when cluster-b is read right after.
	var onA, onB bool
	e2eenv.Eventually(t, e2eenv.Settle, "the job on cluster-b and gone from cluster-a", func() bool {
		onA = e2eenv.Get(t, e.Clusters["cluster-a"], PyTorchJobKind, ns, name) != nil
		onB = e2eenv.Get(t, e.Clusters["cluster-b"], PyTorchJobKind, ns, name) != nil
		if !onA && !onB {
			t.Fatal("the job was on neither cluster during the move")
		}
		return onB && !onA
	})
	p := WaitPlacedOn(t, e, ns, name, "cluster-b")
	if got, want := p.Reason("cluster-a"), "does not match the policy's clusterSelector"; got != want {
		t.Errorf("reason for cluster-a %q, want %q", got, want)
	}

	// The audit trail orders it: the Apply on cluster-b is applied before the Delete on cluster-a is
	// decided, and that Delete is applied after.
	var applyOnB, deleteDecidedOnA, deleteAppliedOnA = -1, -1, -1
	var history []string
	e2eenv.Eventually(t, e2eenv.Settle, "the move's Apply and Delete in the audit trail", func() bool {
		history = nil
		for i, r := range Audit(t, e, ns, name) {
			history = append(history, r.Summary())
			switch p := r.Payload.(type) {
			case *schemas.PlacementApplied:
				if p.Cluster == "cluster-b" && p.Action == schemas.ActionApply && applyOnB < 0 {
					applyOnB = i
				}
				if p.Cluster == "cluster-a" && p.Action == schemas.ActionDelete {
					deleteAppliedOnA = i
				}
			case *schemas.PlacementDecided:
				if p.Cluster == "cluster-a" && p.Action == schemas.ActionDelete {
					deleteDecidedOnA = i
				}
			}
		}
		return applyOnB >= 0 && deleteDecidedOnA >= 0 && deleteAppliedOnA >= 0
	})
	if applyOnB >= deleteDecidedOnA || deleteDecidedOnA >= deleteAppliedOnA {
		t.Errorf("move out of order: Apply applied on cluster-b at %d, Delete decided on cluster-a at %d, applied at %d; trail:\n%s",
			applyOnB, deleteDecidedOnA, deleteAppliedOnA, joinLines(history))
	}
	if n := countDecisions(Audit(t, e, ns, name), "cluster-a", schemas.ActionDelete); n != 1 {
		t.Errorf("%d Delete decisions for cluster-a, want 1", n)
	}
}

func countDecisions(records []audit.AuditRecord, cluster string, action schemas.DecisionAction) int {
	return len(slices.DeleteFunc(slices.Clone(records), func(r audit.AuditRecord) bool {
		d, ok := r.Payload.(*schemas.PlacementDecided)
		return !ok || d.Cluster != cluster || d.Action != action
	}))
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}
