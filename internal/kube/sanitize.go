package kube

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
	out := runtimeDeepCopy(object)
	meta, _ := out["metadata"].(map[string]any)
	for _, field := range serverSetMetadata {
		delete(meta, field)
	}
	if annotations, ok := meta["annotations"].(map[string]any); ok {
		delete(annotations, lastAppliedAnnotation)
		for key := range annotations {
			if strings.HasPrefix(key, controlPlaneAnnotationPrefix) {
				delete(annotations, key)
			}
		}
		if len(annotations) == 0 {
			delete(meta, "annotations")
		}
	}
	delete(out, "status")
	return out
}

func runtimeDeepCopy(object map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: object}).DeepCopy().Object
}
