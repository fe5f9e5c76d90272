package objects

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// serverSetMetadata are metadata fields that belong to the cluster that holds an object; copying them to
// another cluster would make an apply fail or carry the wrong identity.
var serverSetMetadata = []string{
	"uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "managedFields", "selfLink", "ownerReferences", "finalizers",
}

// controlPlaneAnnotationPrefix marks fleetflow's bookkeeping on control-plane objects (schemas.AnnotationPrefix);
// it describes the control plane's view and must neither travel to workload clusters nor count as a change.
const controlPlaneAnnotationPrefix = "fleetflow.io/"

// lastAppliedAnnotation is kubectl's client-side-apply record; it describes the source cluster's history.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// SanitizeForCopy returns a deep copy of object without server-set metadata and without status, ready
// to be server-side applied to another cluster.
func SanitizeForCopy(object map[string]any) map[string]any {
	out := runtimeDeepCopy(SanitizedView(object))
	dropGeneratedJobSelector(out)
	return out
}

// jobControllerUIDLabels are the labels the apiserver gives a Job's pod template from the Job's uid, with the
// selector it generates on them: a copy applied to another cluster, where the Job gets another uid, would be
// refused for them.
var jobControllerUIDLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid"}

// dropGeneratedJobSelector removes, from a batch/v1 Job whose selector the apiserver generated (no
// spec.manualSelector), that selector and the uid labels it selects, so the target cluster generates its own.
func dropGeneratedJobSelector(object map[string]any) {
	if object["apiVersion"] != "batch/v1" || object["kind"] != "Job" {
		return
	}
	spec, ok := object["spec"].(map[string]any)
	if !ok || spec["manualSelector"] == true {
		return
	}
	delete(spec, "selector")
	labels, _, _ := unstructured.NestedMap(spec, "template", "metadata", "labels")
	if labels == nil {
		return
	}
	for _, key := range jobControllerUIDLabels {
		delete(labels, key)
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(spec, "template", "metadata", "labels")
	} else {
		_ = unstructured.SetNestedMap(spec, labels, "template", "metadata", "labels")
	}
}

// SanitizedView is SanitizeForCopy without the deep copy: only the maps it removes fields from (the object,
// its metadata and annotations) are new, everything else is shared with object, so the view must not be
// modified. It is for reading what would be copied, e.g. to hash or encode it, at a fraction of the cost.
func SanitizedView(object map[string]any) map[string]any {
	if object == nil {
		return nil
	}
	out := make(map[string]any, len(object))
	for k, v := range object {
		if k != "status" {
			out[k] = v
		}
	}
	meta, ok := object["metadata"].(map[string]any)
	if !ok {
		return out
	}
	viewMeta := make(map[string]any, len(meta))
	for k, v := range meta {
		viewMeta[k] = v
	}
	for _, field := range serverSetMetadata {
		delete(viewMeta, field)
	}
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		kept := make(map[string]any, len(annotations))
		for key, v := range annotations {
			if key != lastAppliedAnnotation && !strings.HasPrefix(key, controlPlaneAnnotationPrefix) {
				kept[key] = v
			}
		}
		if len(kept) == 0 {
			delete(viewMeta, "annotations")
		} else {
			viewMeta["annotations"] = kept
		}
	}
	out["metadata"] = viewMeta
	return out
}

func runtimeDeepCopy(object map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: object}).DeepCopy().Object
}
