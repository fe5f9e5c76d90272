package kube

import (
	"fmt"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// SetCondition puts cond into obj's status.conditions, in place, leaving the other conditions as they are (as
// written, whatever their shape: they may belong to another writer). It reports false when obj already shows
// cond's status, reason and message. A condition whose status stays keeps its lastTransitionTime.
func SetCondition(obj *unstructured.Unstructured, cond metav1.Condition) (bool, error) {
	cond.Message = FitConditionMessage(cond.Message)
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

// maxConditionMessage is the longest condition message the API takes (metav1.Condition's validation).
const maxConditionMessage = 32768

// FitConditionMessage cuts a message the API would refuse, saying how much was left out: a policy with hundreds
// of invalid fields got no condition at all, its write refused for a message too long.
func FitConditionMessage(message string) string {
	if len(message) <= maxConditionMessage {
		return message
	}
	cut := maxConditionMessage - 64
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + fmt.Sprintf(" ... (%d more bytes)", len(message)-cut)
}
