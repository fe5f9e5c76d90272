package v1alpha1_test

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
)

// TestValidateTaintsNamesTheFieldAndTheValue: a Cluster's taint is held to a node's rules (a label key, a label
// value, one of the three effects), and each problem names its field's path and the value it has.
func TestValidateTaintsNamesTheFieldAndTheValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		taint v1alpha1.ClusterTaint
		want  []string
	}{
		{"NoSchedule", v1alpha1.ClusterTaint{Key: "maintenance", Value: "true", Effect: "NoSchedule"}, nil},
		{"PreferNoSchedule with a prefixed key", v1alpha1.ClusterTaint{Key: "example.com/spot", Effect: "PreferNoSchedule"}, nil},
		{"NoExecute without a value", v1alpha1.ClusterTaint{Key: "gone", Effect: "NoExecute"}, nil},
		{"a misspelt effect", v1alpha1.ClusterTaint{Key: "maintenance", Value: "true", Effect: "NoSchedul"},
			[]string{`spec.taints[0].effect: Unsupported value: "NoSchedul": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`}},
		{"no effect", v1alpha1.ClusterTaint{Key: "maintenance"},
			[]string{"spec.taints[0].effect: Required value: one of NoSchedule, PreferNoSchedule, NoExecute"}},
		{"no key", v1alpha1.ClusterTaint{Effect: "NoSchedule"}, []string{"spec.taints[0].key: Required value"}},
		{"a key with a space", v1alpha1.ClusterTaint{Key: "a b", Effect: "NoSchedule"},
			[]string{`spec.taints[0].key: Invalid value: "a b": not a label key: name part must consist of alphanumeric characters`}},
		{"a key whose name is too long", v1alpha1.ClusterTaint{Key: "example.com/" + strings.Repeat("a", 64), Effect: "NoSchedule"},
			[]string{"spec.taints[0].key: Invalid value", "name part must be no more than 63"}},
		{"a value with a slash", v1alpha1.ClusterTaint{Key: "maintenance", Value: "a/b", Effect: "NoSchedule"},
			[]string{`spec.taints[0].value: Invalid value: "a/b": not a label value`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := v1alpha1.ValidateTaints(field.NewPath("spec", "taints"), []v1alpha1.ClusterTaint{tc.taint})
			got := errs.ToAggregate()
			switch {
			case tc.want == nil && got != nil:
				t.Errorf("refused: %v", got)
			case tc.want != nil && got == nil:
				t.Errorf("accepted, want %q", tc.want)
			case tc.want != nil && !slices.ContainsFunc(errs, func(err *field.Error) bool {
				return !slices.ContainsFunc(tc.want, func(want string) bool { return !strings.Contains(err.Error(), want) })
			}):
				t.Errorf("errors %v, want one saying each of %q", got, tc.want)
			}
		})
	}
}
