package lifecycle

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
)

// Every node event is decoded anew, so without interning each of 100,000 nodes would hold its own copy of
// every label key, of most label values (zone, instance type, pool) and of its cluster's name: about twenty
// small objects a node that the garbage collector marks on every cycle, for strings a handful of distinct
// values account for. unique keeps one copy of each, and drops it once no node refers to it.

func internString(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// internLabels returns a node's labels with interned keys and values, in a map of its own. A value equal to the
// node's name (kubernetes.io/hostname's, usually) shares the name's string instead: it is one of a kind, and
// interning it would only add the unique package's own entry for it.
func internLabels(labels map[string]string, nodeName string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if v == nodeName {
			out[internString(k)] = nodeName
			continue
		}
		out[internString(k)] = internString(v)
	}
	return out
}

// internTaints returns taints with interned keys, values and effects, in a slice of its own.
func internTaints(taints []corev1.Taint) []corev1.Taint {
	if taints == nil {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		out[i] = corev1.Taint{Key: internString(t.Key), Value: internString(t.Value),
			Effect: corev1.TaintEffect(internString(string(t.Effect))), TimeAdded: t.TimeAdded}
	}
	return out
}
