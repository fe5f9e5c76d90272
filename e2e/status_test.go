package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestStatusFlowsBackToTheControlPlane plays the workload cluster's part: once the job is placed, a
// WorkloadStatus (as the cluster producer publishes it) with a Running condition lands on the
// control-plane object's status subresource, with annotations naming the cluster and the phase mapped
// through the built-in PyTorchJob RI. A verdict of Unschedulable puts the reasons in an annotation.
func TestStatusFlowsBackToTheControlPlane(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace("team-status")
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	source := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName())
	ref := schemas.RefOf(source.Object)
	e2eenv.Eventually(t, e2eenv.Settle, "the job placed", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-status", job.GetName()) != nil
	})

	status := map[string]any{"conditions": []any{
		map[string]any{"type": "Created", "status": "True"},
		map[string]any{"type": "Running", "status": "True", "message": "all replicas running"},
	}}
	e.Publish(t, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "status-1",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: status})
	e2eenv.Eventually(t, e2eenv.Settle, "status and annotations on the control plane", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName())
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		a := obj.GetAnnotations()
		return len(conditions) == 2 && a[schemas.AnnotationCluster] == "cluster-a" && a[schemas.AnnotationPhase] == "Running"
	})

	e.Publish(t, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "verdict-1", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 99, Status: schemas.VerdictUnschedulable, Policy: "gpu-first",
		Reasons: map[string]string{"cluster-b": "pod worker (nvidia.com/gpu 8) fits no node", "cluster-a": "not Ready"},
	})
	e2eenv.Eventually(t, e2eenv.Settle, "unschedulable reasons annotated", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()
		return a[schemas.AnnotationPlacement] == "Unschedulable" && a[schemas.AnnotationPolicy] == "gpu-first" &&
			a[schemas.AnnotationReasons] == "cluster-a: not Ready\ncluster-b: pod worker (nvidia.com/gpu 8) fits no node"
	})
	// Bookkeeping annotations never travel to the workload cluster.
	placed := e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-status", job.GetName())
	if _, copied := placed.GetAnnotations()[schemas.AnnotationReasons]; copied {
		t.Error("control-plane bookkeeping annotation copied to the workload cluster")
	}
}
