package scheduler

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// untoleratedTaint returns the first taint with a NoSchedule or NoExecute effect that no toleration tolerates.
// PreferNoSchedule taints never block.
func untoleratedTaint(taints []corev1.Taint, tolerations []corev1.Toleration) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tolerates(&tol, t) }) {
			return t
		}
	}
	return nil
}

// untoleratedTaintOf returns the first taint of the given effect that no toleration tolerates.
func untoleratedTaintOf(taints []corev1.Taint, tolerations []corev1.Toleration, effect corev1.TaintEffect) *corev1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect == effect && !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tolerates(&tol, t) }) {
			return t
		}
	}
	return nil
}

// tolerates follows the Kubernetes rules: an empty effect tolerates every effect, an empty key with Exists
// tolerates every key, Equal (the default operator) compares values.
func tolerates(tol *corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Key != "" && tol.Value == taint.Value
	default:
		return false
	}
}

// matchesNodeSelector reports whether every pair of selector is among labels.
func matchesNodeSelector(selector map[string]string, labels structs.NodeLabels) bool {
	for k, v := range selector {
		if got, ok := labels.Get(k); !ok || got != v {
			return false
		}
	}
	return true
}

// matchesNodeAffinity evaluates required node affinity: the terms are ORed, the requirements of a term ANDed,
// and a term with no requirement matches nothing, as in Kubernetes.
func matchesNodeAffinity(ns *corev1.NodeSelector, nodeName string, labels structs.NodeLabels) bool {
	if ns == nil {
		return true
	}
	for i := range ns.NodeSelectorTerms {
		if matchesTerm(&ns.NodeSelectorTerms[i], nodeName, labels) {
			return true
		}
	}
	return false
}

func matchesTerm(term *corev1.NodeSelectorTerm, nodeName string, labels structs.NodeLabels) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for i := range term.MatchExpressions {
		req := &term.MatchExpressions[i]
		value, present := labels.Get(req.Key)
		if !matchesRequirement(req, value, present) {
			return false
		}
	}
	for i := range term.MatchFields {
		req := &term.MatchFields[i]
		// metadata.name is the only field Kubernetes lets node affinity select on.
		if req.Key != "metadata.name" {
			return false
		}
		if req.Operator != corev1.NodeSelectorOpIn && req.Operator != corev1.NodeSelectorOpNotIn {
			return false
		}
		if !matchesRequirement(req, nodeName, true) {
			return false
		}
	}
	return true
}

func matchesRequirement(req *corev1.NodeSelectorRequirement, value string, present bool) bool {
	switch req.Operator {
	case corev1.NodeSelectorOpIn:
		return present && slices.Contains(req.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(req.Values, value)
	case corev1.NodeSelectorOpExists:
		return present
	case corev1.NodeSelectorOpDoesNotExist:
		return !present
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !present || len(req.Values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(value, 10, 64)
		want, err2 := strconv.ParseInt(req.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if req.Operator == corev1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	default:
		return false
	}
}
