package objects

import (
	"maps"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSanitizedView(t *testing.T) {
	object := func() map[string]any {
		return map[string]any{
			"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
			"metadata": map[string]any{
				"name": "train", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42", "generation": int64(3),
				"creationTimestamp": "2026-11-30T00:00:00Z", "managedFields": []any{map[string]any{"manager": "kubectl"}},
				"finalizers": []any{"x"}, "ownerReferences": []any{}, "labels": map[string]any{"team": "a"},
				"annotations": map[string]any{
					"owner": "ml", lastAppliedAnnotation: "{}", "fleetflow.io/cluster": "east", "fleetflow.io/phase": "Running",
				},
			},
			"spec":   map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": int64(2)}}},
			"status": map[string]any{"conditions": []any{}},
		}
	}
	// What an applier may copy, worked out by hand: identity, labels, the user's annotation and the spec.
	want := map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": "train", "namespace": "team-a", "labels": map[string]any{"team": "a"},
			"annotations": map[string]any{"owner": "ml"}},
		"spec": map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": int64(2)}}},
	}
	original := object()
	view := SanitizedView(original)
	if !reflect.DeepEqual(view, want) {
		t.Errorf("SanitizedView = %#v\nwant %#v", view, want)
	}
	if !reflect.DeepEqual(original, object()) {
		t.Error("SanitizedView modified its input")
	}
	if got := SanitizeForCopy(original); !reflect.DeepEqual(got, want) {
		t.Errorf("SanitizeForCopy = %#v\nwant %#v", got, want)
	}

	onlyBookkeeping := object()
	onlyBookkeeping["metadata"].(map[string]any)["annotations"] = map[string]any{"fleetflow.io/reasons": "{}"}
	if _, ok := SanitizedView(onlyBookkeeping)["metadata"].(map[string]any)["annotations"]; ok {
		t.Error("annotations left empty by sanitizing should be dropped")
	}
	if SanitizedView(nil) != nil {
		t.Error("SanitizedView(nil) should be nil")
	}
}

// TestSanitizeForCopyDropsAJobsGeneratedSelector: the selector and uid labels the apiserver generated for a
// Job go, so the target cluster generates its own; a selector the user set (manualSelector) stays, and so do
// the template's other labels.
func TestSanitizeForCopyDropsAJobsGeneratedSelector(t *testing.T) {
	job := func(manual bool) map[string]any {
		spec := map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"batch.kubernetes.io/controller-uid": "cp-uid"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{
				"batch.kubernetes.io/controller-uid": "cp-uid", "controller-uid": "cp-uid", "job-name": "pi", "app": "pi"}}},
		}
		if manual {
			spec["manualSelector"] = true
		}
		return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "pi"}, "spec": spec}
	}
	original := job(false)
	generated := SanitizeForCopy(original)
	if _, found, _ := unstructured.NestedMap(generated, "spec", "selector"); found {
		t.Error("the generated selector was copied")
	}
	labels, _, _ := unstructured.NestedStringMap(generated, "spec", "template", "metadata", "labels")
	if want := map[string]string{"job-name": "pi", "app": "pi"}; !maps.Equal(labels, want) {
		t.Errorf("template labels %v, want %v", labels, want)
	}
	manual := SanitizeForCopy(job(true))
	if _, found, _ := unstructured.NestedMap(manual, "spec", "selector"); !found {
		t.Error("the selector the user set was dropped")
	}
	if original["spec"].(map[string]any)["selector"] == nil {
		t.Error("the control-plane object itself lost its selector")
	}
}
