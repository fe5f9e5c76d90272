package failover

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/e2e/scenarios"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestFailoverWhenApiserverStops stops the apiserver of the cluster a job runs on. Its heartbeats stop;
// after HeartbeatTimeout the placer marks it NotReady and moves the job to the other cluster, saying in
// the verdict that cluster-a is not Ready.
//
// The Delete of the old copy cannot wait for cluster-b's confirmation as a normal move does
// (publishDecisions: "unless the old one is gone anyway"), and it cannot be carried out either while
// cluster-a is down. It must stay pending, retried by cluster-a's applier, and once the applier gives up
// (schemas.MaxDeliver attempts, spaced by schemas.RetryDelay) be reported as a placement failure on the
// control-plane object: never dropped silently.
//
// A second job, moved with the first, is deleted on the control plane while cluster-a is down. When
// cluster-a comes back, the Deletes its applier gave up on are sent again, and neither copy is left there:
// not the moved job's, and not the deleted job's, which the placer had stopped tracking once its Deletes
// were sent.
func TestFailoverWhenApiserverStops(t *testing.T) {
	e := e2eenv.New(t, e2eenv.Options{FleetFile: fleetFile, CRDFiles: []string{"testdata/crds/pytorchjobs.yaml"},
		PolicyFiles: []string{"testdata/policies/a-then-b.yaml"},
		Placer:      placer.PlacerConfig{HeartbeatTimeout: 6 * time.Second}})
	ctx := t.Context()
	const ns, name = "failover", "survivor"
	job := scenarios.PyTorchJob(ns, name, scenarios.Replicas{Count: 1, CPU: "1", Memory: "2Gi"},
		scenarios.Replicas{Count: 2, CPU: "2", Memory: "8Gi", GPUs: 1})
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	scenarios.WaitPlacedOn(t, e, ns, name, "cluster-a") // first tier, and it fits
	const doomed = "doomed"
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, scenarios.PyTorchJob(ns, doomed,
		scenarios.Replicas{Count: 1, CPU: "1", Memory: "2Gi"}, scenarios.Replicas{Count: 1, CPU: "2", Memory: "8Gi", GPUs: 1})); err != nil {
		t.Fatal(err)
	}
	scenarios.WaitPlacedOn(t, e, ns, doomed, "cluster-a")

	if err := e.Fleet.StopCluster(ctx, "cluster-a"); err != nil {
		t.Fatal(err)
	}
	// The move takes HeartbeatTimeout (6s) plus up to a tick and a heartbeat interval; Settle bounds it.
	p := scenarios.WaitPlacedOn(t, e, ns, name, "cluster-b")
	scenarios.WaitPlacedOn(t, e, ns, doomed, "cluster-b")
	doomedJob := e2eenv.Get(t, e.ControlPlane, scenarios.PyTorchJobKind, ns, doomed)
	gvr, _, err := e.ControlPlane.ResourceFor(doomedJob)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ControlPlane.Dynamic.Resource(gvr).Namespace(ns).Delete(ctx, doomed, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the deleted job gone from cluster-b", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-b"], scenarios.PyTorchJobKind, ns, doomed) == nil
	})
	if got, want := p.Reason("cluster-a"), "is not Ready: its producer has sent no heartbeat since "; !strings.HasPrefix(got, want) {
		t.Errorf("reason for cluster-a %q, want it to start %q (all reasons: %q)", got, want, p.Reasons)
	}
	if !hasLogLine(e.Logs.String(), "cluster NotReady: no heartbeat", "cluster=cluster-a") {
		t.Error("the placer did not log cluster-a going NotReady")
	}

	// The verdict that moved it, and the Delete sent to cluster-a.
	var moved *schemas.PlacementVerdict
	var deleteOnA *schemas.PlacementDecided
	for _, r := range scenarios.Audit(t, e, ns, name) {
		if v := r.Verdict(); v != nil && v.Status == schemas.VerdictPlaced && len(v.Clusters) == 1 && v.Clusters[0] == "cluster-b" {
			moved = v
		}
		if p, ok := r.Payload.(*schemas.PlacementDecided); ok && p.Cluster == "cluster-a" && p.Action == schemas.ActionDelete {
			deleteOnA = p
		}
	}
	if moved == nil {
		t.Fatal("no verdict placing the job on cluster-b in the audit trail")
	}
	if got := moved.ReasonCodes["cluster-a"]; got != "NotReady" {
		t.Errorf("verdict's reason code for cluster-a %q, want NotReady", got)
	}
	if deleteOnA == nil {
		t.Fatal("no Delete decision for the copy on cluster-a")
	}

	// Pending: cluster-a's applier keeps retrying the Delete and has not reported it applied.
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a's applier retrying the Delete", func() bool {
		return hasLogLine(e.Logs.String(), "handler failed; will retry", deleteOnA.DecisionID)
	})
	if outcome := outcomeOf(t, e, ns, name, deleteOnA.DecisionID); outcome != nil {
		t.Fatalf("the Delete on the stopped cluster-a has an outcome already: %s", outcome.Summary())
	}

	// Not silent: when the applier gives up, the failure is reported and lands on the control plane.
	giveUp := e2eenv.Settle
	for attempt := uint64(1); attempt < schemas.MaxDeliver; attempt++ {
		giveUp += schemas.RetryDelay(attempt)
	}
	// Watched on the control-plane object (cheap to poll), then checked in the audit trail.
	e2eenv.Eventually(t, giveUp, "the failed Delete on cluster-a annotated on the control plane", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, scenarios.PyTorchJobKind, ns, name)
		return strings.HasPrefix(obj.GetAnnotations()[schemas.AnnotationPlacementError], "Delete on cluster-a: ")
	})
	outcome := outcomeOf(t, e, ns, name, deleteOnA.DecisionID)
	if outcome == nil {
		t.Fatal("the control plane shows the failed Delete, but the audit trail has no outcome for it")
	}
	failed, ok := outcome.Payload.(*schemas.PlacementFailed)
	if !ok {
		t.Fatalf("the Delete on the stopped cluster-a: want a failure report, got %s", outcome.Summary())
	}
	if failed.Attempts != schemas.MaxDeliver {
		t.Errorf("gave up after %d attempts, want %d", failed.Attempts, schemas.MaxDeliver)
	}
	// The job itself stays where it failed over to.
	if p := scenarios.PlacementOf(t, e, ns, name); p.Status != string(schemas.VerdictPlaced) || p.Cluster != "cluster-b" {
		t.Errorf("after the failed Delete the job is %s on %q, want Placed on cluster-b", p.Status, p.Cluster)
	}

	// cluster-a comes back with both copies on it: the Deletes given up on are sent again and carried out.
	if err := e.Fleet.StartCluster(ctx, "cluster-a"); err != nil {
		t.Fatal(err)
	}
	for _, job := range []string{name, doomed} {
		e2eenv.Eventually(t, e2eenv.Settle, "the copy of "+job+" gone from cluster-a once it is back", func() bool {
			return e2eenv.Get(t, e.Clusters["cluster-a"], scenarios.PyTorchJobKind, ns, job) == nil
		})
	}
	if p := scenarios.PlacementOf(t, e, ns, name); p.Status != string(schemas.VerdictPlaced) || p.Cluster != "cluster-b" {
		t.Errorf("once cluster-a is back the job is %s on %q, want it still Placed on cluster-b", p.Status, p.Cluster)
	}
}

// outcomeOf returns the applied or failed report of a decision, nil while there is none.
func outcomeOf(t *testing.T, e *e2eenv.Env, ns, name, decisionID string) *audit.AuditRecord {
	t.Helper()
	for _, r := range scenarios.Audit(t, e, ns, name) {
		switch p := r.Payload.(type) {
		case *schemas.PlacementApplied:
			if p.DecisionID == decisionID {
				return &r
			}
		case *schemas.PlacementFailed:
			if p.DecisionID == decisionID {
				return &r
			}
		}
	}
	return nil
}

func hasLogLine(logs string, parts ...string) bool {
	for line := range strings.SplitSeq(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
