package state

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDescribeConstraints(t *testing.T) {
	own := map[string]string{"app": "train"}
	selector := func(l map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: l} }
	spread := func(key string, when corev1.UnsatisfiableConstraintAction, sel *metav1.LabelSelector) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: sel}
	}
	term := func(key string, sel *metav1.LabelSelector, namespaces ...string) corev1.PodAffinityTerm {
		return corev1.PodAffinityTerm{TopologyKey: key, LabelSelector: sel, Namespaces: namespaces}
	}
	tests := []struct {
		name             string
		spec             corev1.PodSpec
		applied, ignored []string
	}{
		{name: "none"},
		{name: "spreads", spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			spread(corev1.LabelHostname, corev1.DoNotSchedule, selector(own)),
			spread(corev1.LabelTopologyZone, corev1.DoNotSchedule, selector(map[string]string{"app": "db"})),
			spread(corev1.LabelTopologyZone, corev1.ScheduleAnyway, selector(map[string]string{"app": "db"}))}},
			applied: []string{"spread by kubernetes.io/hostname (maxSkew 1)"},
			ignored: []string{"spread by topology.kubernetes.io/zone counting other pods (app=db)"}},
		{name: "affinities", spec: corev1.PodSpec{Affinity: &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				term(corev1.LabelTopologyZone, selector(own)),
				term(corev1.LabelTopologyZone, selector(own), "other")}},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
				term(corev1.LabelHostname, selector(own)),
				term(corev1.LabelTopologyZone, selector(own)),
				term(corev1.LabelHostname, selector(map[string]string{"app": "db"}))}}}},
			applied: []string{"together by topology.kubernetes.io/zone (pod affinity to its own pods)",
				"one per node (pod anti-affinity to app=train)"},
			ignored: []string{"pod affinity by topology.kubernetes.io/zone to pods of other namespaces (app=train)",
				"pod anti-affinity by topology.kubernetes.io/zone to its own pods, by a topology wider than the node",
				"pod anti-affinity by kubernetes.io/hostname to other pods (app=db)"}},
		{name: "host network ports", spec: corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
			applied: []string{"one per node (host port TCP/8080)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applied, ignored := DescribeConstraints(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: own}, Spec: tt.spec})
			if !slices.Equal(applied, tt.applied) || !slices.Equal(ignored, tt.ignored) {
				t.Errorf("applied %q, ignored %q\nwant applied %q, ignored %q", applied, ignored, tt.applied, tt.ignored)
			}
		})
	}
}
