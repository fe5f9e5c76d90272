package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
)

// FieldError is one problem in a policy: the path of the field and why it is wrong.
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

// ValidationError lists every problem of one policy.
type ValidationError struct {
	Policy string
	Errors []*FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Error()
	}
	return fmt.Sprintf("SchedulePolicy %q is invalid: %s", e.Policy, strings.Join(parts, "; "))
}

// KindInfo tells validation whether a kind's ResourceInterface makes it divisible (one scalable component with a
// plain replicas path), and whether the kind is known at all.
type KindInfo func(group, kind string) (divisible, known bool)

type validator struct {
	errs []*FieldError
}

func (v *validator) add(path *field.Path, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: path.String(), Reason: fmt.Sprintf(format, args...)})
}

// selector compiles a label selector. A bad one is reported as the API server reports it, at the path of the
// requirement or label at fault (spec.clusterSelector.matchExpressions[0].values), not only of the selector.
func (v *validator) selector(path *field.Path, sel *metav1.LabelSelector) labels.Selector {
	if sel == nil {
		return labels.Everything()
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		errs = append(errs, metav1validation.ValidateLabels(map[string]string{k: sel.MatchLabels[k]},
			path.Child("matchLabels").Key(k))...)
	}
	for i := range sel.MatchExpressions {
		errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(sel.MatchExpressions[i],
			metav1validation.LabelSelectorValidationOptions{}, path.Child("matchExpressions").Index(i))...)
	}
	for _, e := range errs {
		v.errs = append(v.errs, &FieldError{Path: e.Field, Reason: e.ErrorBody()})
	}
	if len(errs) > 0 {
		return labels.Nothing()
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		v.add(path, "%v", err)
		return labels.Nothing()
	}
	return s
}

func validateSpread(v *validator, path *field.Path, spec *v1alpha1.SchedulePolicySpec, kinds KindInfo) {
	sc := spec.SpreadConstraints
	switch sc.SpreadMode {
	case v1alpha1.SpreadModeDuplicate:
		if len(sc.PercentageSplit) > 0 {
			v.add(path.Child("percentageSplit"), "only Divide splits by percentage")
		}
		if sc.TopologyKey != "" {
			// Karmada spreads by a cluster label this way; here a Duplicate copies to every selected cluster,
			// whatever its label, and a key it ignores would promise one copy per value.
			v.add(path.Child("topologyKey"), "only Divide spreads over a topologyKey; Duplicate copies to every selected cluster")
		}
	case v1alpha1.SpreadModeDivide:
		validateSplit(v, path, sc)
		validateDivisibleKinds(v, spec, kinds)
	default:
		v.add(path.Child("spreadMode"), "unsupported value %q, want Duplicate or Divide", sc.SpreadMode)
	}
	if sc.TopologyKey != "" {
		for _, msg := range validation.IsQualifiedName(sc.TopologyKey) {
			v.add(path.Child("topologyKey"), "%s", msg)
		}
	}
}

func validateSplit(v *validator, path *field.Path, sc *v1alpha1.SpreadConstraints) {
	splitPath := path.Child("percentageSplit")
	if len(sc.PercentageSplit) == 0 {
		v.add(splitPath, "Divide needs at least one entry")
		return
	}
	if sc.TopologyKey == "" {
		v.add(path.Child("topologyKey"), "required with percentageSplit")
	}
	seen := map[string]bool{}
	var sum int32
	for i, split := range sc.PercentageSplit {
		if split.TopologyValue == "" {
			v.add(splitPath.Index(i).Child("topologyValue"), "required")
		} else if seen[split.TopologyValue] {
			v.add(splitPath.Index(i).Child("topologyValue"), "duplicate value %q", split.TopologyValue)
		}
		seen[split.TopologyValue] = true
		if split.Percentage < 0 || split.Percentage > 100 {
			v.add(splitPath.Index(i).Child("percentage"), "%d is outside 0..100", split.Percentage)
		}
		sum += split.Percentage
	}
	if sum != 100 {
		v.add(splitPath, "percentages sum to %d, want 100", sum)
	}
}

func validateDivisibleKinds(v *validator, spec *v1alpha1.SchedulePolicySpec, kinds KindInfo) {
	kindsPath := field.NewPath("spec", "resourceSelectors", "kinds")
	if len(spec.ResourceSelectors.Kinds) == 0 {
		v.add(kindsPath, "Divide needs the policy to select only divisible kinds; list them")
		return
	}
	if kinds == nil {
		return
	}
	for i, gk := range spec.ResourceSelectors.Kinds {
		if gk.Kind == "" {
			continue // reported as required
		}
		divisible, known := kinds(gk.Group, gk.Kind)
		switch {
		case !known:
			v.add(kindsPath.Index(i), "no ResourceInterface for %s, so Divide cannot split it", groupKind(gk))
		case !divisible:
			v.add(kindsPath.Index(i), "%s is not divisible (its ResourceInterface has no single scalable component "+
				"with a plain replicas path), so Divide cannot split it", groupKind(gk))
		}
	}
}

// validateGroup checks that a kind's group is an API group as workloads carry it: a group written with its
// version, or the core group spelt "core", would never match a workload, and the policy would select nothing.
func validateGroup(v *validator, path *field.Path, group string) {
	switch {
	case group == "":
	case group == "core":
		v.add(path, `the core group is the empty group: leave group out (kind: ConfigMap), do not write "core"`)
	case strings.Contains(group, "/"):
		before, _, _ := strings.Cut(group, "/")
		v.add(path, "%q is a group and version; write the group alone (%q)", group, before)
	default:
		for _, msg := range validation.IsDNS1123Subdomain(group) {
			v.add(path, "%q: %s", group, msg)
		}
	}
}

func groupKind(gk v1alpha1.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

func validateTolerations(v *validator, path *field.Path, tolerations []corev1.Toleration) {
	for i, t := range tolerations {
		p := path.Index(i)
		// As the API server checks a pod's tolerations: a key or value no taint can carry would never tolerate one.
		if t.Key != "" {
			for _, msg := range validation.IsQualifiedName(t.Key) {
				v.add(p.Child("key"), "%q: %s", t.Key, msg)
			}
		}
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				v.add(p.Child("value"), "%q: %s", t.Value, msg)
			}
		}
		switch t.Operator {
		case "", corev1.TolerationOpEqual:
			if t.Key == "" {
				v.add(p.Child("key"), "required with operator Equal")
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				v.add(p.Child("value"), "must be empty with operator Exists")
			}
		default:
			v.add(p.Child("operator"), "unsupported value %q, want Equal or Exists", t.Operator)
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			v.add(p.Child("effect"), "unsupported value %q", t.Effect)
		}
		// As the API server refuses it in a pod: only a NoExecute taint evicts, so only it has a time to tolerate.
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			v.add(p.Child("effect"), "%q: must be NoExecute when tolerationSeconds is set", t.Effect)
		}
	}
}
