package kube

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// SetCondition puts cond into obj's status.conditions, in place, leaving the other conditions as they are (as
// written, whatever their shape: they may belong to another writer). It reports false when obj already shows
// cond's status, reason and message. A condition whose status stays keeps its lastTransitionTime.
func SetCondition(obj *unstructured.Unstructured, cond metav1.Condition) (bool, error) {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	kept := make([]any, 0, len(conditions)+1)
	since := ""
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] != cond.Type {
			kept = append(kept, c)
			continue
		}
		if m["status"] == string(cond.Status) {
			if m["reason"] == cond.Reason && m["message"] == cond.Message {
				return false, nil
			}
			since, _ = m["lastTransitionTime"].(string)
		}
	}
	shown, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cond)
	if err != nil {
		return false, fmt.Errorf("condition %s: %w", cond.Type, err)
	}
	if since != "" {
		shown["lastTransitionTime"] = since
	}
	if err := unstructured.SetNestedSlice(obj.Object, append(kept, shown), "status", "conditions"); err != nil {
		return false, fmt.Errorf("condition %s: %w", cond.Type, err)
	}
	return true, nil
}
