package producers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/placement/karta"
)

// riObject builds a ResourceInterface object with the given annotations and resourceVersion.
func riObject(resourceVersion string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "optimization.nvidia.com/v1alpha1",
		"kind":       "ResourceInterface",
		"metadata":   map[string]any{"name": "user-lws"},
		"spec":       map[string]any{"structureDefinition": map[string]any{}},
	}}
	u.SetResourceVersion(resourceVersion)
	if annotations != nil {
		u.SetAnnotations(annotations)
	}
	return u
}

// TestRelevantUpdateOfResourceInterfaceAnnotations: the exclusive-topology expression lives in an annotation of
// the fleetflow.io/ prefix, which is otherwise fleetflow's bookkeeping; a change of it alone (which does not bump
// the generation) must still be published, or the placer keeps the RI's previous expression.
func TestRelevantUpdateOfResourceInterfaceAnnotations(t *testing.T) {
	const key = karta.AnnotationExclusiveTopology
	tests := []struct {
		name     string
		family   Family
		old, new map[string]string
		want     bool
	}{
		{name: "exclusive expression changed", family: ResourceInterfaceFamily,
			old: map[string]string{key: `{topologyKey: "a", pods: {x: 1}}`}, new: map[string]string{key: `{topologyKey: "b", pods: {x: 1}}`}, want: true},
		{name: "exclusive expression added", family: ResourceInterfaceFamily,
			new: map[string]string{key: `{topologyKey: "a", pods: {x: 1}}`}, want: true},
		{name: "exclusive expression removed", family: ResourceInterfaceFamily,
			old: map[string]string{key: `{topologyKey: "a", pods: {x: 1}}`}, want: true},
		{name: "bookkeeping annotation only", family: ResourceInterfaceFamily,
			old: map[string]string{"fleetflow.io/phase": "a"}, new: map[string]string{"fleetflow.io/phase": "b"}, want: false},
		{name: "workload bookkeeping annotation only", family: WorkloadFamily,
			old: map[string]string{"fleetflow.io/phase": "a"}, new: map[string]string{"fleetflow.io/phase": "b"}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := relevantUpdate(tt.family, riObject("1", tt.old), riObject("2", tt.new)); got != tt.want {
				t.Fatalf("relevantUpdate = %v, want %v", got, tt.want)
			}
		})
	}
}
