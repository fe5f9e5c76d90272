package karta

import (
	"fmt"
	"slices"
	"testing"

	"github.com/itchyny/gojq"

	"github.com/fleetflow/fleetflow/deploy/resourceinterfaces"
)

// TestBuiltinInferenceServicePodSelectors runs the built-in InferenceService RI's pod selectors, which Karta
// evaluates on pods (fleetflow only validates them), on pods labelled as KServe 0.15 labels them: the head and
// the workers of a multi-node predictor both carry component: predictor, and only the workers' app label
// (isvc.<name>-predictor-worker) tells them apart.
func TestBuiltinInferenceServicePodSelectors(t *testing.T) {
	data, err := resourceinterfaces.FS.ReadFile("inferenceservice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ris, err := ParseResourceInterfaces(data, "inferenceservice.yaml")
	if err != nil || len(ris) != 1 {
		t.Fatalf("parse: %d RIs, %v", len(ris), err)
	}
	type selector struct {
		component string
		code      *gojq.Code
		value     *string
	}
	var selectors []selector
	for _, c := range ris[0].Spec.StructureDefinition.ChildComponents {
		if c.Name == "canary" || c.PodSelector == nil || c.PodSelector.ComponentTypeSelector == nil {
			continue // a newer KServe's canary pods are predictor pods too
		}
		s := c.PodSelector.ComponentTypeSelector
		q, err := gojq.Parse(s.KeyPath)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		code, err := gojq.Compile(q)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		selectors = append(selectors, selector{c.Name, code, s.Value})
	}
	tests := []struct {
		name, component, app string
		want                 []string
	}{
		{"raw head", "predictor", "isvc.llm-predictor", []string{"predictor"}},
		{"raw worker", "predictor", "isvc.llm-predictor-worker", []string{"predictor-worker"}},
		{"Knative predictor revision", "predictor", "llm-predictor-00001", []string{"predictor"}},
		{"raw transformer", "transformer", "isvc.llm-transformer", []string{"transformer"}},
		{"Knative explainer", "explainer", "llm-explainer-00002", []string{"explainer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := map[string]any{"metadata": map[string]any{"labels": map[string]any{
				"component": tt.component, "app": tt.app, "serving.kserve.io/inferenceservice": "llm"}}}
			var got []string
			for _, s := range selectors {
				v, ok := s.code.Run(pod).Next()
				if err, isErr := v.(error); isErr {
					t.Fatalf("%s: %v", s.component, err)
				}
				if ok && v != nil && (s.value == nil || fmt.Sprint(v) == *s.value) {
					got = append(got, s.component)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("pod matches %v, want %v", got, tt.want)
			}
		})
	}
}
