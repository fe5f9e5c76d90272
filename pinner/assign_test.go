package pinner

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/schemas"
)

func TestSlotFor(t *testing.T) {
	tests := []struct {
		name         string
		packed, used map[string]int64
		want         string
	}{
		{name: "first node by name", packed: map[string]int64{"n2": 1, "n1": 2}, want: "n1"},
		{name: "full node skipped", packed: map[string]int64{"n1": 2, "n2": 1}, used: map[string]int64{"n1": 2}, want: "n2"},
		{name: "all full", packed: map[string]int64{"n1": 1}, used: map[string]int64{"n1": 1}},
		{name: "no pins", used: map[string]int64{"n1": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := slotFor(tt.packed, tt.used)
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("slotFor = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

// gatedPod builds a pod held by the pinner's gate, and by any other gates given.
func gatedPod(otherGates ...string) *corev1.Pod {
	pod := &corev1.Pod{}
	for _, g := range append(otherGates, schemas.SchedulingGatePinned) {
		pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
	}
	return pod
}

func TestReleased(t *testing.T) {
	zone := corev1.NodeSelectorRequirement{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}
	withAffinity := gatedPod("other.io/gate")
	withAffinity.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{zone}}, {MatchExpressions: []corev1.NodeSelectorRequirement{zone}}}}}}

	t.Run("pinned without affinity", func(t *testing.T) {
		pod := gatedPod()
		out := released(pod, "n1")
		if gated(out) || out.Spec.SchedulingGates != nil {
			t.Fatalf("gates = %v, want none", out.Spec.SchedulingGates)
		}
		if got := pinnedNode(out); got != "n1" {
			t.Fatalf("pinnedNode = %q, want n1", got)
		}
		if !gated(pod) || pod.Spec.Affinity != nil {
			t.Fatal("released changed its input")
		}
	})
	t.Run("pinned with affinity and another gate", func(t *testing.T) {
		out := released(withAffinity, "n2")
		if len(out.Spec.SchedulingGates) != 1 || out.Spec.SchedulingGates[0].Name != "other.io/gate" {
			t.Fatalf("gates = %v, want only other.io/gate", out.Spec.SchedulingGates)
		}
		for i, term := range out.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if len(term.MatchExpressions) != 1 || len(term.MatchFields) != 1 || term.MatchFields[0].Values[0] != "n2" {
				t.Fatalf("term %d = %+v, want its zone expression and a field on n2", i, term)
			}
		}
		if got := pinnedNode(out); got != "n2" {
			t.Fatalf("pinnedNode = %q, want n2: a pod another gate holds still takes its slot", got)
		}
	})
	t.Run("let go unpinned", func(t *testing.T) {
		out := released(gatedPod(), "")
		if gated(out) || out.Spec.Affinity != nil || pinnedNode(out) != "" {
			t.Fatalf("released unpinned = %+v", out.Spec)
		}
	})
}
