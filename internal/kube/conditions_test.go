package kube

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSetCondition(t *testing.T) {
	earlier := "2026-01-01T00:00:00Z"
	now := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
	nowText := now.UTC().Format(time.RFC3339)
	other := map[string]any{"type": "Ready", "status": "True", "whatever": "kept as written"}
	tests := []struct {
		name        string
		existing    []any
		cond        metav1.Condition
		wantChanged bool
		wantSince   string
	}{
		{"added beside another writer's", []any{other},
			metav1.Condition{Type: "Joined", Status: "False", Reason: "R", Message: "m", LastTransitionTime: now}, true, nowText},
		{"shown already", []any{other, map[string]any{"type": "Joined", "status": "False", "reason": "R", "message": "m", "lastTransitionTime": earlier}},
			metav1.Condition{Type: "Joined", Status: "False", Reason: "R", Message: "m", LastTransitionTime: now}, false, earlier},
		{"new message, same status: the transition stays", []any{other, map[string]any{"type": "Joined", "status": "False", "reason": "R", "message": "m", "lastTransitionTime": earlier}},
			metav1.Condition{Type: "Joined", Status: "False", Reason: "R", Message: "n", LastTransitionTime: now}, true, earlier},
		{"new status: a new transition", []any{other, map[string]any{"type": "Joined", "status": "False", "reason": "R", "message": "m", "lastTransitionTime": earlier}},
			metav1.Condition{Type: "Joined", Status: "True", Reason: "S", Message: "m", LastTransitionTime: now}, true, nowText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": tt.existing}}}
			changed, err := SetCondition(obj, tt.cond)
			if err != nil || changed != tt.wantChanged {
				t.Fatalf("SetCondition = %v, %v; want %v", changed, err, tt.wantChanged)
			}
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			if len(conditions) != 2 || conditions[0].(map[string]any)["whatever"] != "kept as written" {
				t.Fatalf("conditions %v, want the other writer's kept as written and one Joined", conditions)
			}
			joined := conditions[1].(map[string]any)
			if joined["status"] != string(tt.cond.Status) || joined["message"] != tt.cond.Message || joined["lastTransitionTime"] != tt.wantSince {
				t.Errorf("Joined %v, want status %s since %s", joined, tt.cond.Status, tt.wantSince)
			}
		})
	}
}

// TestConditionMessagesFitTheAPI: a message longer than the API takes (a policy with hundreds of invalid fields)
// is cut to fit, at a character's start, saying how much was left out, instead of the whole write being refused.
func TestConditionMessagesFitTheAPI(t *testing.T) {
	long := strings.Repeat("é", 20000) // 40,000 bytes, two per character
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	if _, err := SetCondition(obj, metav1.Condition{Type: "Accepted", Status: "False", Reason: "Invalid", Message: long}); err != nil {
		t.Fatal(err)
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	message := conditions[0].(map[string]any)["message"].(string)
	if len(message) > maxConditionMessage || !utf8.ValidString(message) || !strings.HasSuffix(message, " more bytes)") ||
		!strings.HasPrefix(message, "éé") {
		t.Errorf("message of %d bytes (valid UTF-8: %v) ending %q, want at most %d, cut at a character, saying what was cut",
			len(message), utf8.ValidString(message), message[len(message)-30:], maxConditionMessage)
	}
	if changed, err := SetCondition(obj, metav1.Condition{Type: "Accepted", Status: "False", Reason: "Invalid", Message: long}); err != nil || changed {
		t.Errorf("the same long message again: changed %v, %v; want it taken as shown", changed, err)
	}
}
