package policy

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
)

func named(name string, spec v1alpha1.SchedulePolicySpec) *v1alpha1.SchedulePolicy {
	p := &v1alpha1.SchedulePolicy{Spec: spec}
	p.Name = name
	return p
}

// kindInfo knows Deployment (divisible) and PyTorchJob (several components, not divisible).
func kindInfo(group, kind string) (divisible, known bool) {
	switch group + "/" + kind {
	case "apps/Deployment":
		return true, true
	case "kubeflow.org/PyTorchJob":
		return false, true
	}
	return false, false
}

func divide(kinds []v1alpha1.GroupKind, split ...v1alpha1.PercentageSplit) v1alpha1.SchedulePolicySpec {
	return v1alpha1.SchedulePolicySpec{
		ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: kinds},
		SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
			PercentageSplit: split}}
}

func TestCompileRejectsWithFieldPaths(t *testing.T) {
	deployment := []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}
	cases := []struct {
		name string
		spec v1alpha1.SchedulePolicySpec
		want []string
	}{
		{"percentages must sum to 100",
			divide(deployment, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 50}, v1alpha1.PercentageSplit{TopologyValue: "us", Percentage: 40}),
			[]string{"spec.spreadConstraints.percentageSplit: percentages sum to 90, want 100"}},
		{"Divide on a non-divisible kind",
			divide([]v1alpha1.GroupKind{{Group: "kubeflow.org", Kind: "PyTorchJob"}}, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 100}),
			[]string{"spec.resourceSelectors.kinds[0]: PyTorchJob.kubeflow.org is not divisible"}},
		{"Divide on an unknown kind",
			divide([]v1alpha1.GroupKind{{Group: "example.com", Kind: "Widget"}}, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 100}),
			[]string{"spec.resourceSelectors.kinds[0]: no ResourceInterface for Widget.example.com"}},
		{"Divide with a kind left empty",
			divide([]v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}, {Group: "apps"}}, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 100}),
			[]string{"spec.resourceSelectors.kinds[1].kind: required"}},
		{"kinds whose group no workload carries",
			v1alpha1.SchedulePolicySpec{ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{
				{Group: "apps", Kind: "Deployment"}, {Kind: "ConfigMap"}, {Group: "apps/v1", Kind: "StatefulSet"},
				{Group: "core", Kind: "Secret"}, {Group: "Kubeflow.org", Kind: "PyTorchJob"}}}},
			[]string{`spec.resourceSelectors.kinds[2].group: "apps/v1" is a group and version; write the group alone ("apps")`,
				`spec.resourceSelectors.kinds[3].group: the core group is the empty group`,
				`spec.resourceSelectors.kinds[4].group: "Kubeflow.org": a lowercase RFC 1123 subdomain`}},
		{"Duplicate with a topologyKey or a percentageSplit",
			v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate,
				TopologyKey: "region", PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 100}}}},
			[]string{"spec.spreadConstraints.percentageSplit: only Divide splits by percentage",
				"spec.spreadConstraints.topologyKey: only Divide spreads over a topologyKey; Duplicate copies to every selected cluster"}},
		{"Divide without kinds", divide(nil, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 100}),
			[]string{"spec.resourceSelectors.kinds: Divide needs"}},
		{"duplicate topology value",
			divide(deployment, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 50}, v1alpha1.PercentageSplit{TopologyValue: "eu", Percentage: 50}),
			[]string{"spec.spreadConstraints.percentageSplit[1].topologyValue: duplicate value \"eu\""}},
		{"bad selector operator",
			v1alpha1.SchedulePolicySpec{ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "region", Operator: "Near", Values: []string{"eu"}}}}},
			[]string{`spec.clusterSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`}},
		{"In without values",
			v1alpha1.SchedulePolicySpec{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpExists}, {Key: "team", Operator: metav1.LabelSelectorOpIn}}}},
			[]string{"spec.namespaceSelector.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
		{"bad labelSelector value",
			v1alpha1.SchedulePolicySpec{ResourceSelectors: v1alpha1.ResourceSelectors{LabelSelectors: []metav1.LabelSelector{{},
				{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a", "b c"}}}}}}},
			[]string{`spec.resourceSelectors.labelSelectors[1].matchExpressions[0].values[1]: Invalid value: "b c"`}},
		{"bad tier selector",
			v1alpha1.SchedulePolicySpec{OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"ok": "yes"}}, {MatchLabels: map[string]string{"bad key!": "x"}}}}},
			[]string{`spec.orderedClusterSelector.tiers[1].matchLabels[bad key!]: Invalid value: "bad key!"`}},
		{"unknown spread mode and scoring",
			v1alpha1.SchedulePolicySpec{Scoring: "Random", SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: "Scatter"}},
			[]string{"spec.spreadConstraints.spreadMode: unsupported value \"Scatter\"", "spec.scoring: unsupported value \"Random\""}},
		{"groupBy with a bad label key",
			v1alpha1.SchedulePolicySpec{GroupBy: &v1alpha1.GroupBy{LabelKey: "not a key"}},
			[]string{"spec.groupBy.labelKey: "}},
		{"toleration with a key and a value no taint can carry",
			v1alpha1.SchedulePolicySpec{Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists},
				{Key: "nvidia.com/gpu ", Operator: corev1.TolerationOpExists}, {Key: "dedicated", Value: "ml team"}}},
			[]string{`spec.tolerations[1].key: "nvidia.com/gpu ": name part must consist of`,
				`spec.tolerations[2].value: "ml team": a valid label must be`}},
		{"tolerationSeconds on a toleration of another effect than NoExecute",
			v1alpha1.SchedulePolicySpec{Tolerations: []corev1.Toleration{
				{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: new(int64(60))},
				{Key: "maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: new(int64(60))},
				{Key: "maintenance", Operator: corev1.TolerationOpExists, TolerationSeconds: new(int64(60))}}},
			[]string{`spec.tolerations[1].effect: "NoSchedule": must be NoExecute when tolerationSeconds is set`,
				`spec.tolerations[2].effect: "": must be NoExecute when tolerationSeconds is set`}},
		{"toleration with a bad operator",
			v1alpha1.SchedulePolicySpec{Tolerations: []corev1.Toleration{{Key: "k", Operator: "Maybe"}}},
			[]string{"spec.tolerations[0].operator: unsupported value \"Maybe\""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(named("p", tc.spec), kindInfo)
			var verr *ValidationError
			if !errors.As(err, &verr) {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if len(verr.Errors) != len(tc.want) {
				t.Errorf("got %d field errors (%v), want %d", len(verr.Errors), err, len(tc.want))
			}
		})
	}
}

func TestSelectsAndBest(t *testing.T) {
	p, err := Compile(named("gold", v1alpha1.SchedulePolicySpec{Priority: 3,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}},
		ResourceSelectors: v1alpha1.ResourceSelectors{
			Kinds:          []v1alpha1.GroupKind{{Group: "kubeflow.org", Kind: "PyTorchJob"}},
			LabelSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}, {MatchLabels: map[string]string{"team": "b"}}}},
		OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"provider": "onprem"}}, {}}},
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	gold := map[string]string{"tier": "gold"}
	checks := []struct {
		name string
		got  bool
		want bool
	}{
		{"matching kind, namespace and second label selector", p.SelectsWorkload("kubeflow.org", "PyTorchJob", map[string]string{"team": "b"}, gold), true},
		{"other kind", p.SelectsWorkload("ray.io", "RayJob", map[string]string{"team": "a"}, gold), false},
		{"other namespace tier", p.SelectsWorkload("kubeflow.org", "PyTorchJob", map[string]string{"team": "a"}, map[string]string{"tier": "silver"}), false},
		{"no label selector matches", p.SelectsWorkload("kubeflow.org", "PyTorchJob", map[string]string{"team": "c"}, gold), false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	// The empty second tier matches everything: onprem is tier 0, anything else tier 1.
	if p.Tier(map[string]string{"provider": "onprem"}) != 0 || p.Tier(map[string]string{"provider": "cloud"}) != 1 {
		t.Errorf("tiers wrong")
	}
	low, _ := Compile(named("a-low", v1alpha1.SchedulePolicySpec{Priority: 1}), nil)
	tie, _ := Compile(named("b-tie", v1alpha1.SchedulePolicySpec{Priority: 3}), nil)
	if got := Best([]*Policy{low, tie, p}); got.Name != "b-tie" {
		t.Errorf("best = %s, want b-tie (priority 3 like gold, smaller name)", got.Name)
	}
	if Best(nil) != nil {
		t.Errorf("best of none must be nil")
	}
}

// TestMatchWorkloadNamesEachSelector: each selector is judged on its own, and the policy selects exactly when
// SelectsWorkload says so.
func TestMatchWorkloadNamesEachSelector(t *testing.T) {
	p, err := Compile(named("ml", v1alpha1.SchedulePolicySpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "ml"}},
		ResourceSelectors: v1alpha1.ResourceSelectors{
			Kinds:          []v1alpha1.GroupKind{{Group: "kubeflow.org", Kind: "PyTorchJob"}},
			LabelSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"team": "a"}}}},
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name             string
		group, kind      string
		labels, nsLabels map[string]string
		want             WorkloadMatch
	}{
		{"all match", "kubeflow.org", "PyTorchJob", map[string]string{"team": "a"}, map[string]string{"tier": "ml"},
			WorkloadMatch{Namespace: true, Kind: true, Labels: true}},
		{"wrong namespace", "kubeflow.org", "PyTorchJob", map[string]string{"team": "a"}, nil,
			WorkloadMatch{Kind: true, Labels: true}},
		{"wrong kind and labels", "apps", "Deployment", map[string]string{"team": "b"}, map[string]string{"tier": "ml"},
			WorkloadMatch{Namespace: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := p.MatchWorkload(tc.group, tc.kind, tc.labels, tc.nsLabels)
			if got != tc.want {
				t.Errorf("MatchWorkload = %+v, want %+v", got, tc.want)
			}
			if sel := p.SelectsWorkload(tc.group, tc.kind, tc.labels, tc.nsLabels); sel != got.Selects() {
				t.Errorf("SelectsWorkload = %v, MatchWorkload.Selects = %v", sel, got.Selects())
			}
		})
	}
}
