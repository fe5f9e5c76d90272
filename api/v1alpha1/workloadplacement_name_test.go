package v1alpha1

import (
	"strings"
	"testing"
)

func TestWorkloadPlacementName(t *testing.T) {
	long := strings.Repeat("a", 250)
	tests := []struct {
		name, workload, kind string
		want                 string
	}{
		{name: "name and kind", workload: "llama-finetune", kind: "PyTorchJob", want: "llama-finetune-pytorchjob"},
		{name: "kinds kept apart", workload: "llama-finetune", kind: "JobSet", want: "llama-finetune-jobset"},
		{name: "colon", workload: "system:thing", kind: "Role", want: "system.thing-role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorkloadPlacementName(tt.workload, tt.kind); got != tt.want {
				t.Errorf("WorkloadPlacementName(%q, %q) = %q, want %q", tt.workload, tt.kind, got, tt.want)
			}
		})
	}
	t.Run("too long", func(t *testing.T) {
		a, b := WorkloadPlacementName(long, "PyTorchJob"), WorkloadPlacementName(long, "JobSet")
		if len(a) > maxPlacementName || len(b) > maxPlacementName {
			t.Errorf("names of %d and %d characters, want at most %d", len(a), len(b), maxPlacementName)
		}
		if a == b {
			t.Errorf("two kinds of one long name both give %q", a)
		}
	})
}
