package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
)

// TestObservedGenerationIsShownInTheControlPlanesTerms: the copy's status.observedGeneration counts the copy's
// own generations; the control plane shows it as the control-plane generation the copy's controller acted
// on, so `kubectl rollout status` on the control plane waits for an edit until the cluster's controller saw
// it, and no longer. The test plays the cluster's Deployment controller.
func TestObservedGenerationIsShownInTheControlPlanesTerms(t *testing.T) {
	e := newEnv(t)
	const ns = "team-generation"
	if err := e.ControlPlane.EnsureNamespace(t.Context(), ns, e2eenv.FieldManager, nil); err != nil {
		t.Fatal(err)
	}
	applyPolicy(t, e, "generation-on-cluster-a", map[string]any{"resourceSelectors": map[string]any{
		"kinds":          []any{map[string]any{"group": "apps", "kind": "Deployment"}},
		"labelSelectors": []any{map[string]any{"matchLabels": map[string]any{"e2e-policy": ns}}}},
		"clusterSelector": map[string]any{"matchLabels": map[string]any{"fleetflow.io/name": "cluster-a"}}})
	deployment := func(image string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": ns, "labels": map[string]any{"e2e-policy": ns}},
			"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": image,
						"resources": map[string]any{"requests": map[string]any{"cpu": "100m"}}}}}}}}}
	}
	cluster := e.Clusters["cluster-a"]
	copies := cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	waitCopyRunning := func(image string) *unstructured.Unstructured {
		t.Helper()
		var copied *unstructured.Unstructured
		e2eenv.Eventually(t, e2eenv.Settle, "the copy running "+image, func() bool {
			if copied = e2eenv.Get(t, cluster, deploymentKind, ns, "web"); copied == nil {
				return false
			}
			containers, _, _ := unstructured.NestedSlice(copied.Object, "spec", "template", "spec", "containers")
			return len(containers) == 1 && containers[0].(map[string]any)["image"] == image
		})
		return copied
	}
	// observe plays the controller: it reports the copy's current generation observed once the copy runs image.
	observe := func(image string) {
		t.Helper()
		copied := waitCopyRunning(image)
		copied.Object["status"] = map[string]any{"observedGeneration": copied.GetGeneration(), "replicas": int64(1)}
		if _, err := copies.UpdateStatus(t.Context(), copied, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	shown := func() (observed, generation int64) {
		cp := e2eenv.Get(t, e.ControlPlane, deploymentKind, ns, "web")
		observed, _, _ = unstructured.NestedInt64(cp.Object, "status", "observedGeneration")
		return observed, cp.GetGeneration()
	}

	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, deployment("example.com/web:1")); err != nil {
		t.Fatal(err)
	}
	observe("example.com/web:1")
	e2eenv.Eventually(t, e2eenv.Settle, "the first version shown observed", func() bool {
		observed, generation := shown()
		return observed == generation && observed > 0
	})

	// The edit: until the cluster's controller reports the copy's new generation, the control plane's
	// observedGeneration stays behind its generation.
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, deployment("example.com/web:2")); err != nil {
		t.Fatal(err)
	}
	waitCopyRunning("example.com/web:2")
	if observed, generation := shown(); observed >= generation {
		t.Errorf("observedGeneration shown %d of generation %d before the controller saw the edit, want it behind", observed, generation)
	}
	observe("example.com/web:2")
	e2eenv.Eventually(t, e2eenv.Settle, "the edit shown observed", func() bool {
		observed, generation := shown()
		return observed == generation && generation >= 2
	})
}
