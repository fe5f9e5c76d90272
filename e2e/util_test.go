package e2e

import (
	"context"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
)

func strconvU(v uint64) string { return strconv.FormatUint(v, 10) }

// applyPolicy applies a SchedulePolicy of name and spec to the control plane for the rest of the test.
func applyPolicy(t *testing.T, e *e2eenv.Env, name string, spec map[string]any) {
	t.Helper()
	policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
		"metadata": map[string]any{"name": name}, "spec": spec}}
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		policies := e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "schedulepolicies"})
		_ = policies.Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}
