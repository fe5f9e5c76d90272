package pinner

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/schemas"
)

// nodeField is the field a pin's node affinity selects nodes by: the node's name, which placement packs by.
const nodeField = "metadata.name"

// gated reports whether the pod still waits for the pinner.
func gated(pod *corev1.Pod) bool {
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == schemas.SchedulingGatePinned
	})
}

// pinnedNode is the node a pod runs on or was pinned to, "" for neither.
func pinnedNode(pod *corev1.Pod) string {
	if pod.Spec.NodeName != "" {
		return pod.Spec.NodeName
	}
	if gated(pod) {
		return ""
	}
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == nodeField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}

// holdsNode reports whether a pod takes room on its node: it has not finished.
func holdsNode(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// slotFor returns the first packed node, by name, that holds fewer of the component's pods than were packed on it.
func slotFor(packed, used map[string]int64) (string, bool) {
	nodes := make([]string, 0, len(packed))
	for node := range packed {
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	for _, node := range nodes {
		if used[node] < packed[node] {
			return node, true
		}
	}
	return "", false
}

// released is pod with the pinner's gate lifted and, when node is not empty, a required affinity to that node
// added to every term of its required node affinity (a gated pod's affinity may only be narrowed so).
func released(pod *corev1.Pod, node string) *corev1.Pod {
	out := pod.DeepCopy()
	out.Spec.SchedulingGates = slices.DeleteFunc(out.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == schemas.SchedulingGatePinned
	})
	if len(out.Spec.SchedulingGates) == 0 {
		out.Spec.SchedulingGates = nil
	}
	if node == "" {
		return out
	}
	req := corev1.NodeSelectorRequirement{Key: nodeField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if out.Spec.Affinity == nil {
		out.Spec.Affinity = &corev1.Affinity{}
	}
	if out.Spec.Affinity.NodeAffinity == nil {
		out.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{req}}}}
		return out
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = append(terms[i].MatchFields, req)
	}
	return out
}
