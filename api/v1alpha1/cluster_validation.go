package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// clusterTaintEffects are the effects a Cluster's taint may have, as a node's.
var clusterTaintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule),
	string(corev1.TaintEffectNoExecute)}

// ValidateTaints checks a Cluster's taints as Kubernetes checks a node's: a key that is a label key, a value that
// is a label value, and one of the three effects. The CRD's schema refuses most of it, but a Cluster applied under
// an older CRD got in with any of them, and a taint whose effect is misspelt would otherwise be ignored: the
// workloads it was meant to keep off would still be placed there, with no word anywhere.
func ValidateTaints(path *field.Path, taints []ClusterTaint) field.ErrorList {
	var errs field.ErrorList
	for i := range taints {
		t := &taints[i]
		at := path.Index(i)
		if t.Key == "" {
			errs = append(errs, field.Required(at.Child("key"), "a taint needs a key"))
		} else if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			errs = append(errs, field.Invalid(at.Child("key"), t.Key, "not a label key: "+strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
			errs = append(errs, field.Invalid(at.Child("value"), t.Value, "not a label value: "+strings.Join(msgs, "; ")))
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		case "":
			errs = append(errs, field.Required(at.Child("effect"), "one of "+strings.Join(clusterTaintEffects, ", ")))
		default:
			errs = append(errs, field.NotSupported(at.Child("effect"), t.Effect, clusterTaintEffects))
		}
	}
	return errs
}
