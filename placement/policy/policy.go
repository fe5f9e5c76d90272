package policy

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
)

// Policy is a validated, compiled SchedulePolicy. It is immutable.
type Policy struct {
	Name     string
	Priority int32
	// Spec is the policy as written; callers must not modify it.
	Spec *v1alpha1.SchedulePolicySpec

	namespaceSelector labels.Selector
	kinds             map[v1alpha1.GroupKind]struct{}
	labelSelectors    []labels.Selector
	clusterSelector   labels.Selector
	tiers             []labels.Selector

	// ModifyIndex is the stream sequence of the last write to the fleet view.
	ModifyIndex uint64
}

// Compile validates p and compiles it. kinds may be nil, which skips the check that Divide selects divisible kinds.
// The error is a *ValidationError naming each bad field.
func Compile(p *v1alpha1.SchedulePolicy, kinds KindInfo) (*Policy, error) {
	v := &validator{}
	spec := p.Spec.DeepCopy()
	specPath := field.NewPath("spec")
	if p.Name == "" {
		v.add(field.NewPath("metadata", "name"), "required")
	}
	out := &Policy{Name: p.Name, Priority: spec.Priority, Spec: spec}
	out.namespaceSelector = v.selector(specPath.Child("namespaceSelector"), spec.NamespaceSelector)
	out.clusterSelector = v.selector(specPath.Child("clusterSelector"), spec.ClusterSelector)

	rsPath := specPath.Child("resourceSelectors")
	if len(spec.ResourceSelectors.Kinds) > 0 {
		out.kinds = map[v1alpha1.GroupKind]struct{}{}
	}
	for i, gk := range spec.ResourceSelectors.Kinds {
		if gk.Kind == "" {
			v.add(rsPath.Child("kinds").Index(i).Child("kind"), "required")
		}
		validateGroup(v, rsPath.Child("kinds").Index(i).Child("group"), gk.Group)
		out.kinds[gk] = struct{}{}
	}
	for i := range spec.ResourceSelectors.LabelSelectors {
		out.labelSelectors = append(out.labelSelectors,
			v.selector(rsPath.Child("labelSelectors").Index(i), &spec.ResourceSelectors.LabelSelectors[i]))
	}

	if ocs := spec.OrderedClusterSelector; ocs != nil {
		tiersPath := specPath.Child("orderedClusterSelector", "tiers")
		if len(ocs.Tiers) == 0 {
			v.add(tiersPath, "needs at least one tier")
		}
		for i := range ocs.Tiers {
			out.tiers = append(out.tiers, v.selector(tiersPath.Index(i), &ocs.Tiers[i]))
		}
	}
	if spec.SpreadConstraints != nil {
		validateSpread(v, specPath.Child("spreadConstraints"), spec, kinds)
	}
	if spec.GroupBy != nil {
		gbPath := specPath.Child("groupBy", "labelKey")
		for _, msg := range validation.IsQualifiedName(spec.GroupBy.LabelKey) {
			v.add(gbPath, "%s", msg)
		}
		if spec.SpreadConstraints != nil {
			v.add(specPath.Child("groupBy"), "cannot be combined with spreadConstraints: a group goes to one cluster")
		}
	}
	switch spec.Scoring {
	case "", v1alpha1.ScoringBinPack, v1alpha1.ScoringSpread:
	default:
		v.add(specPath.Child("scoring"), "unsupported value %q, want BinPack or Spread", spec.Scoring)
	}
	validateTolerations(v, specPath.Child("tolerations"), spec.Tolerations)
	if len(v.errs) > 0 {
		return nil, &ValidationError{Policy: p.Name, Errors: v.errs}
	}
	return out, nil
}

// SelectsWorkload reports whether the policy selects a workload of group/kind with these labels in a namespace
// with nsLabels.
func (p *Policy) SelectsWorkload(group, kind string, workloadLabels, nsLabels map[string]string) bool {
	return p.selectsNamespace(nsLabels) && p.selectsKind(group, kind) && p.selectsLabels(workloadLabels)
}

// WorkloadMatch says which of a policy's workload selectors admit a workload; the policy selects the workload
// when all of them do.
type WorkloadMatch struct {
	Namespace bool
	Kind      bool
	Labels    bool
}

// Selects reports whether every selector admits the workload.
func (m WorkloadMatch) Selects() bool { return m.Namespace && m.Kind && m.Labels }

// MatchWorkload evaluates each workload selector of the policy on its own, for explaining why a policy does
// not select a workload; SelectsWorkload is the same test, stopping at the first selector that refuses.
func (p *Policy) MatchWorkload(group, kind string, workloadLabels, nsLabels map[string]string) WorkloadMatch {
	return WorkloadMatch{Namespace: p.selectsNamespace(nsLabels), Kind: p.selectsKind(group, kind),
		Labels: p.selectsLabels(workloadLabels)}
}

func (p *Policy) selectsNamespace(nsLabels map[string]string) bool {
	return p.namespaceSelector.Matches(labels.Set(nsLabels))
}

// selectsKind: a policy that lists no kinds selects every kind.
func (p *Policy) selectsKind(group, kind string) bool {
	if p.kinds == nil {
		return true
	}
	_, ok := p.kinds[v1alpha1.GroupKind{Group: group, Kind: kind}]
	return ok
}

// selectsLabels: the label selectors are ORed, and a policy with none selects every workload.
func (p *Policy) selectsLabels(workloadLabels map[string]string) bool {
	if len(p.labelSelectors) == 0 {
		return true
	}
	for _, s := range p.labelSelectors {
		if s.Matches(labels.Set(workloadLabels)) {
			return true
		}
	}
	return false
}

// SelectsCluster reports whether the cluster selector admits a cluster with these labels.
func (p *Policy) SelectsCluster(clusterLabels map[string]string) bool {
	return p.clusterSelector.Matches(labels.Set(clusterLabels))
}

// Tiers is the number of fill-and-spill tiers; 1 when the policy has none.
func (p *Policy) Tiers() int { return max(1, len(p.tiers)) }

// Tier returns the first tier whose selector admits the cluster, or -1.
func (p *Policy) Tier(clusterLabels map[string]string) int {
	if len(p.tiers) == 0 {
		return 0
	}
	for i, s := range p.tiers {
		if s.Matches(labels.Set(clusterLabels)) {
			return i
		}
	}
	return -1
}

// CapacityAware reports whether fit is checked.
func (p *Policy) CapacityAware() bool { return p.Spec.IsCapacityAware() }

// Scoring is the policy's scoring strategy with the default filled in.
func (p *Policy) Scoring() v1alpha1.ScoringStrategy { return p.Spec.ScoringOrDefault() }

// Tolerations are the policy's tolerations of cluster taints.
func (p *Policy) Tolerations() []corev1.Toleration { return p.Spec.Tolerations }

// Best returns the policy that governs a workload among those that select it: the highest priority, ties to
// the smallest name. It returns nil for none.
func Best(matching []*Policy) *Policy {
	if len(matching) == 0 {
		return nil
	}
	return slices.MinFunc(matching, func(a, b *Policy) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}
