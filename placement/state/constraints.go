package state

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// DescribeConstraints says, for people reading an analysis, which of a pod template's required constraints
// between pods the scheduler applies and which it leaves out: spread constraints,
// pod affinity and anti-affinity, host ports. Soft ones (ScheduleAnyway, preferred terms) are neither, since
// they never keep a pod from a node.
func DescribeConstraints(template *corev1.PodTemplateSpec) (applied, ignored []string) {
	if template == nil {
		return nil, nil
	}
	for _, c := range selfSpreadConstraints(template) {
		applied = append(applied, fmt.Sprintf("spread by %s (maxSkew %d)", c.TopologyKey, c.MaxSkew))
	}
	for _, key := range selfAffinityKeys(template) {
		applied = append(applied, "together by "+key+" (pod affinity to its own pods)")
	}
	for _, entry := range selfAntiAffinityOnNode(template) {
		applied = append(applied, "one per node (pod anti-affinity to "+strings.TrimPrefix(entry, "anti-affinity/")+")")
	}
	for _, port := range hostPortsOf(&template.Spec) {
		applied = append(applied, "one per node (host port "+port+")")
	}
	if template.Spec.NodeName != "" {
		// kube-scheduler never sees such pods, so their spread and pod affinity do not bind either.
		return applied, ignored
	}
	own := labels.Set(template.Labels)
	for _, tsc := range template.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if why := otherPods(tsc.LabelSelector, nil, nil, own); why != "" {
			ignored = append(ignored, fmt.Sprintf("spread by %s counting %s", tsc.TopologyKey, why))
		}
	}
	if affinity := template.Spec.Affinity; affinity != nil {
		if pa := affinity.PodAffinity; pa != nil {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				if why := otherPods(term.LabelSelector, term.Namespaces, term.NamespaceSelector, own); why != "" {
					ignored = append(ignored, fmt.Sprintf("pod affinity by %s to %s", term.TopologyKey, why))
				}
			}
		}
		if pa := affinity.PodAntiAffinity; pa != nil {
			for _, term := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
				why := otherPods(term.LabelSelector, term.Namespaces, term.NamespaceSelector, own)
				switch {
				case why != "":
				case term.TopologyKey != corev1.LabelHostname:
					why = "its own pods, by a topology wider than the node"
				case term.LabelSelector != nil && len(term.LabelSelector.MatchLabels)+len(term.LabelSelector.MatchExpressions) == 0:
					why = "every pod"
				}
				if why != "" {
					ignored = append(ignored, fmt.Sprintf("pod anti-affinity by %s to %s", term.TopologyKey, why))
				}
			}
		}
	}
	return applied, ignored
}

// otherPods says which pods a term selects when they are not the template's own pods in its namespace (which
// fleetflow cannot see), or "" when they are.
func otherPods(selector *metav1.LabelSelector, namespaces []string, namespaceSelector *metav1.LabelSelector, own labels.Set) string {
	if selector == nil {
		return "no pods (no labelSelector)"
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return fmt.Sprintf("pods of an invalid selector (%v)", err)
	}
	shown := s.String()
	if shown == "" {
		shown = "every pod"
	}
	switch {
	case len(namespaces) > 0 || namespaceSelector != nil:
		return "pods of other namespaces (" + shown + ")"
	case !s.Matches(own):
		return "other pods (" + shown + ")"
	}
	return ""
}
