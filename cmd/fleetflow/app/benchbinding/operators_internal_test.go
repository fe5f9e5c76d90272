package benchbinding

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
)

// TestOperatorCRDs: each operator gets the CRDs the local fleet's catalog names, labelled for the level-1
// policy, and the training operator the kubeflow.org/v1 MPIJob it serves.
func TestOperatorCRDs(t *testing.T) {
	tests := []struct {
		operators []string
		want      []string
	}{
		{operators: []string{"training-operator"}, want: []string{"pytorchjobs.kubeflow.org", "mpijobs.kubeflow.org"}},
		{operators: []string{"jobset-controller", "lws-controller"},
			want: []string{"jobsets.jobset.x-k8s.io", "leaderworkersets.leaderworkerset.x-k8s.io"}},
	}
	for _, tt := range tests {
		crds, err := operatorCRDs(tt.operators)
		if err != nil {
			t.Fatalf("%v: %v", tt.operators, err)
		}
		var got []string
		for _, crd := range crds {
			got = append(got, crd.GetName())
			if crd.GetLabels()[frameworkcrds.PropagateLabel] != "true" {
				t.Errorf("%s: not labelled %s", crd.GetName(), frameworkcrds.PropagateLabel)
			}
			if crd.GetName() == "mpijobs.kubeflow.org" {
				versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
				if len(versions) == 0 || versions[0].(map[string]any)["name"] != "v1" {
					t.Errorf("mpijobs.kubeflow.org versions %v, want v1", versions)
				}
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%v: CRDs %v, want %v", tt.operators, got, tt.want)
		}
	}
	if _, err := operatorCRDs([]string{"no-such-operator"}); err == nil {
		t.Error("an unknown operator gave no error")
	}
}
