package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/structs"
)

func TestTolerations(t *testing.T) {
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name        string
		taints      []corev1.Taint
		tolerations []corev1.Toleration
		blocked     bool
	}{
		{"untolerated NoSchedule blocks", []corev1.Taint{gpuTaint}, nil, true},
		{"PreferNoSchedule never blocks", []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}}, nil, false},
		{"Exists on the key tolerates any value", []corev1.Taint{gpuTaint}, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}, false},
		{"Equal needs the same value", []corev1.Taint{gpuTaint}, []corev1.Toleration{{Key: "nvidia.com/gpu", Value: "absent"}}, true},
		{"Equal with the same value tolerates", []corev1.Taint{gpuTaint}, []corev1.Toleration{{Key: "nvidia.com/gpu", Value: "present"}}, false},
		{"a toleration for another effect does not", []corev1.Taint{gpuTaint}, []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}, true},
		{"empty key with Exists tolerates everything", []corev1.Taint{gpuTaint, {Key: "x", Effect: corev1.TaintEffectNoExecute}}, []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := untoleratedTaint(tc.taints, tc.tolerations) != nil; got != tc.blocked {
				t.Errorf("blocked = %v, want %v", got, tc.blocked)
			}
		})
	}
}

func TestNodeAffinity(t *testing.T) {
	labels := structs.NewNodeLabels(map[string]string{"zone": "z1", "gpus": "8"})
	expr := func(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	term := func(reqs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: reqs}
	}
	cases := []struct {
		name  string
		terms []corev1.NodeSelectorTerm
		want  bool
	}{
		{"In matches", []corev1.NodeSelectorTerm{term(expr("zone", corev1.NodeSelectorOpIn, "z1", "z2"))}, true},
		{"NotIn on an absent label matches", []corev1.NodeSelectorTerm{term(expr("rack", corev1.NodeSelectorOpNotIn, "r1"))}, true},
		{"Exists", []corev1.NodeSelectorTerm{term(expr("zone", corev1.NodeSelectorOpExists))}, true},
		{"DoesNotExist", []corev1.NodeSelectorTerm{term(expr("zone", corev1.NodeSelectorOpDoesNotExist))}, false},
		{"Gt compares integers", []corev1.NodeSelectorTerm{term(expr("gpus", corev1.NodeSelectorOpGt, "4"))}, true},
		{"Lt compares integers", []corev1.NodeSelectorTerm{term(expr("gpus", corev1.NodeSelectorOpLt, "4"))}, false},
		{"Gt on a non-integer fails", []corev1.NodeSelectorTerm{term(expr("zone", corev1.NodeSelectorOpGt, "4"))}, false},
		{"requirements of a term are ANDed", []corev1.NodeSelectorTerm{term(expr("zone", corev1.NodeSelectorOpIn, "z1"), expr("gpus", corev1.NodeSelectorOpIn, "4"))}, false},
		{"terms are ORed", []corev1.NodeSelectorTerm{term(expr("zone", corev1.NodeSelectorOpIn, "z9")), term(expr("gpus", corev1.NodeSelectorOpIn, "8"))}, true},
		{"an empty term matches nothing", []corev1.NodeSelectorTerm{{}}, false},
		{"matchFields on metadata.name", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "node-1")}}}, true},
		{"matchFields on another field matches nothing", []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{expr("spec.podCIDR", corev1.NodeSelectorOpIn, "x")}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := matchesNodeAffinity(&corev1.NodeSelector{NodeSelectorTerms: tc.terms}, "node-1", labels); got != tc.want {
				t.Errorf("match = %v, want %v", got, tc.want)
			}
		})
	}
}
