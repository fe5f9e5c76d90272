package consumers

import corev1 "k8s.io/api/core/v1"

// maxInterned bounds the intern table; past it the table starts over (strings already shared stay shared).
const maxInterned = 1 << 20

// interner makes equal strings of the fleet view share one allocation. Every node event is decoded anew, so
// without it each of 100,000 nodes holds its own copy of every label key, of most label values (zone, instance
// type, pool) and of its cluster's name: about twenty small objects a node that the garbage collector marks on
// every cycle, for strings a handful of distinct values account for.
type interner struct {
	strings map[string]string
}

func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	if shared, ok := in.strings[s]; ok {
		return shared
	}
	if in.strings == nil || len(in.strings) >= maxInterned {
		in.strings = map[string]string{}
	}
	in.strings[s] = s
	return s
}

// labels returns labels with interned keys and values, in a map of its own.
func (in *interner) labels(labels map[string]string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		out[in.str(k)] = in.str(v)
	}
	return out
}

// taints returns taints with interned keys, values and effects, in a slice of its own.
func (in *interner) taints(taints []corev1.Taint) []corev1.Taint {
	if taints == nil {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		out[i] = corev1.Taint{Key: in.str(t.Key), Value: in.str(t.Value), Effect: corev1.TaintEffect(in.str(string(t.Effect))),
			TimeAdded: t.TimeAdded}
	}
	return out
}
