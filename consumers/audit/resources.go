package audit

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// formatResources renders a resource list as "cpu=4, memory=16Gi" in name order; zero amounts are left out.
func formatResources(list corev1.ResourceList) string {
	names := make([]string, 0, len(list))
	for name, q := range list {
		if !q.IsZero() {
			names = append(names, string(name))
		}
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		q := list[corev1.ResourceName(name)]
		parts[i] = name + "=" + q.String()
	}
	return strings.Join(parts, ", ")
}
