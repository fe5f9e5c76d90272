package e2e

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestBatchJobIsPlaced: a batch/v1 Job a policy places lands on its cluster. The control plane's apiserver
// generated spec.selector and the controller-uid template labels from the control-plane Job's uid; the copy
// leaves them out, or the cluster, where the Job gets another uid, would refuse it.
func TestBatchJobIsPlaced(t *testing.T) {
	e := newEnv(t)
	const ns = "team-job"
	if err := e.ControlPlane.EnsureNamespace(t.Context(), ns, e2eenv.FieldManager, nil); err != nil {
		t.Fatal(err)
	}
	applyPolicy(t, e, "jobs-on-cluster-a", map[string]any{"resourceSelectors": map[string]any{
		"kinds": []any{map[string]any{"group": "batch", "kind": "Job"}}},
		"clusterSelector": map[string]any{"matchLabels": map[string]any{"fleetflow.io/name": "cluster-a"}}})
	job := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": "pi", "namespace": ns},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never",
			"containers": []any{map[string]any{"name": "pi", "image": "example.com/pi:1",
				"resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}}}
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	jobKind := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	e2eenv.Eventually(t, e2eenv.Settle, "the Job on cluster-a, or an error shown", func() bool {
		if e2eenv.Get(t, e.Clusters["cluster-a"], jobKind, ns, "pi") != nil {
			return true
		}
		return e2eenv.Get(t, e.ControlPlane, jobKind, ns, "pi").GetAnnotations()[schemas.AnnotationPlacementError] != ""
	})
	cp := e2eenv.Get(t, e.ControlPlane, jobKind, ns, "pi")
	if e2eenv.Get(t, e.Clusters["cluster-a"], jobKind, ns, "pi") == nil {
		t.Errorf("the Job was not placed on cluster-a: %s", cp.GetAnnotations()[schemas.AnnotationPlacementError])
	}
}
