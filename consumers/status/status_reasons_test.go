package status

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/schemas"
)

// unschedulableOn builds an Unschedulable verdict with one reason per cluster, each reasonBytes long.
func unschedulableOn(clusters, reasonBytes int) *schemas.PlacementVerdict {
	v := &schemas.PlacementVerdict{
		Workload: schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team", Name: "train", UID: "u1"},
		Status:   schemas.VerdictUnschedulable, Message: "no cluster fits", Reasons: map[string]string{},
	}
	for i := range clusters {
		v.Reasons[fmt.Sprintf("cluster-%05d", i)] = strings.Repeat("x", reasonBytes)
	}
	return v
}

func TestReasonsAnnotation(t *testing.T) {
	tests := []struct {
		name        string
		verdict     *schemas.PlacementVerdict
		wantLines   int // lines shown, the pointer to the audit included
		wantPointer bool
	}{
		{"a small fleet shows every reason", unschedulableOn(3, 40), 4, false},
		{"no reasons", &schemas.PlacementVerdict{Status: schemas.VerdictPlaced}, 0, false},
		// 2,000 clusters × ~120 bytes is about 240 KiB, which with the user's own annotations passes the API's 256 KiB.
		{"a large fleet keeps what fits and points to the audit", unschedulableOn(2000, 100), -1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reasonsAnnotation(tt.verdict)
			if len(got) > MaxReasonsAnnotationBytes {
				t.Errorf("annotation is %d bytes, want at most %d", len(got), MaxReasonsAnnotationBytes)
			}
			lines := strings.Split(got, "\n")
			if got == "" {
				lines = nil
			}
			if tt.wantLines >= 0 && len(lines) != tt.wantLines {
				t.Errorf("%d lines, want %d:\n%s", len(lines), tt.wantLines, got)
			}
			pointer := len(lines) > 0 && strings.Contains(lines[len(lines)-1], "fleetflow audit tail --workload "+tt.verdict.Workload.Key())
			if pointer != tt.wantPointer {
				t.Errorf("pointer to the audit: %v, want %v (last line %q)", pointer, tt.wantPointer, lines[len(lines)-1])
			}
			if !tt.wantPointer {
				return
			}
			// Every shown line is whole, in cluster order, and the pointer counts the rest.
			shown := lines[:len(lines)-1]
			if shown[0] != tt.verdict.Message {
				t.Errorf("first line %q, want the message", shown[0])
			}
			for i, line := range shown[1:] {
				want := fmt.Sprintf("cluster-%05d: %s", i, strings.Repeat("x", 100))
				if line != want {
					t.Fatalf("line %d = %q, want %q", i+1, line, want)
				}
			}
			rest := len(tt.verdict.Reasons) + 1 - len(shown)
			if !strings.Contains(lines[len(lines)-1], fmt.Sprintf("and %d more lines", rest)) {
				t.Errorf("pointer %q, want it to count %d more lines", lines[len(lines)-1], rest)
			}
		})
	}
}
