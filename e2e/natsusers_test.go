package e2e

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestPartsWorkAsTheirOwnNATSUsers: with the embedded server accepting only the per-part users, each part
// still does its job: the cluster producers report their nodes (the environment waits for them), the
// control-plane producer the job, the placer places it, cluster-a's applier applies it, the status writer
// records the verdict, and a delete removes the copy; and no part is refused anything it asked of NATS.
func TestPartsWorkAsTheirOwnNATSUsers(t *testing.T) {
	opts := options()
	opts.NATSUsers = true
	e := e2eenv.New(t, opts)
	ctx := t.Context()
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	target := e.Clusters["cluster-a"]
	e2eenv.Eventually(t, e2eenv.Settle, "the job in cluster-a", func() bool {
		return e2eenv.Get(t, target, pytorchJobKind, "team-a", job.GetName()) != nil
	})
	e2eenv.Eventually(t, e2eenv.Settle, "the Placed verdict on the control plane", func() bool {
		source := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-a", job.GetName())
		return source != nil && source.GetAnnotations()[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced)
	})
	source := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-a", job.GetName())
	gvr, _, err := e.ControlPlane.ResourceFor(source)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ControlPlane.Dynamic.Resource(gvr).Namespace("team-a").Delete(ctx, job.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the job gone from cluster-a", func() bool {
		return e2eenv.Get(t, target, pytorchJobKind, "team-a", job.GetName()) == nil
	})
	if logs := e.Logs.String(); strings.Contains(strings.ToLower(logs), "permissions violation") {
		t.Errorf("a part was refused what it asked of NATS:\n%s", logs)
	}
}
