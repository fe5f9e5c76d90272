package frameworkcrds_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
)

func TestObjects(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		want    []string
		wantErr string
	}{
		{name: "named, in order", files: []string{"rayclusters.yaml", "pytorchjobs.yaml"},
			want: []string{"rayclusters.ray.io", "pytorchjobs.kubeflow.org"}},
		{name: "unknown file", files: []string{"pytorchjobs.yml"}, wantErr: "framework CRD pytorchjobs.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			crds, err := frameworkcrds.Objects(tt.files...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, crd := range crds {
				got = append(got, crd.GetName())
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEveryFileIsACRD: each file holds one CRD named by its plural and group, which the API server requires.
func TestEveryFileIsACRD(t *testing.T) {
	crds, err := frameworkcrds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) < 10 {
		t.Fatalf("%d CRDs, want one per framework kind", len(crds))
	}
	for _, crd := range crds {
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		if crd.GetKind() != "CustomResourceDefinition" || crd.GetName() != plural+"."+group {
			t.Errorf("%s: kind %s, plural %q, group %q", crd.GetName(), crd.GetKind(), plural, group)
		}
	}
}

func TestPropagated(t *testing.T) {
	crds, err := frameworkcrds.Objects("jobsets.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range frameworkcrds.Propagated(crds) {
		if crd.GetLabels()[frameworkcrds.PropagateLabel] != "true" {
			t.Errorf("%s: labels %v", crd.GetName(), crd.GetLabels())
		}
	}
}
