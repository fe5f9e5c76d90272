package karta

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// jsonRoundTrip is obj as it comes back from JSON: the types the engine's results are defined on.
func jsonRoundTrip(t *testing.T, obj map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClientGoIntegersMapAsTheirJSON: an object read with client-go holds int64 numbers, which gojq compares
// wrongly without failing (.spec.replicas == 1 is false). Phase and Analyze answer for it what they answer for
// the same object decoded from JSON.
func TestClientGoIntegersMapAsTheirJSON(t *testing.T) {
	ri, ok := builtinRegistry(t).Lookup(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"})
	if !ok {
		t.Fatal("no built-in Deployment RI")
	}
	for _, ready := range []int64{1, 3} {
		obj := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team", "generation": int64(2)},
			"spec": map[string]any{"replicas": int64(3), "template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "web"}}}}},
			"status": map[string]any{"readyReplicas": ready, "replicas": int64(3)}}
		want, err := ri.Phase(jsonRoundTrip(t, obj))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ri.Phase(obj)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%d of 3 ready, int64 numbers: phase %s, want %s as from JSON", ready, got, want)
		}
		analysis, err := ri.Analyze(obj)
		if err != nil {
			t.Fatal(err)
		}
		if analysis.Status != want {
			t.Errorf("%d of 3 ready, int64 numbers: analysis status %s, want %s as from JSON", ready, analysis.Status, want)
		}
	}
}

// TestRayGroupsWithTheDefaultMaxReplicas: KubeRay's CRD defaults maxReplicas to 2147483647, which a
// multi-host group multiplies by its hosts; an upper bound past the largest count bounds nothing more, so the
// analysis stands, with the group's pods counted from its replicas.
func TestRayGroupsWithTheDefaultMaxReplicas(t *testing.T) {
	ri, ok := builtinRegistry(t).Lookup(schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"})
	if !ok {
		t.Fatal("no built-in RayCluster RI")
	}
	template := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "ray",
		"resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": "4"}}}}}}
	obj := jsonRoundTrip(t, map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": "tpu-like", "namespace": "team"},
		"spec": map[string]any{
			"headGroupSpec": map[string]any{"template": template},
			"workerGroupSpecs": []any{map[string]any{"groupName": "hosts", "replicas": 2, "minReplicas": 0,
				"maxReplicas": 2147483647, "numOfHosts": 4, "template": template}},
		}})
	analysis, err := ri.Analyze(obj)
	if err != nil {
		t.Fatalf("analysis of a multi-host group with the default maxReplicas: %v", err)
	}
	var workers int64
	for _, c := range analysis.Components {
		if c.Name == "worker" {
			workers += c.Pods
		}
	}
	if workers != 2*4 {
		t.Errorf("worker pods = %d, want 2 replicas of 4 hosts", workers)
	}
}

// TestStatusPathThatFailsLeavesTheAnalysis: a control-plane object has no status before it is placed, and a
// status expression that fails on it (iterating conditions that are not there) leaves its status Undefined
// rather than failing the analysis, which would keep the workload from ever being placed; Phase still says
// what failed.
func TestStatusPathThatFailsLeavesTheAnalysis(t *testing.T) {
	ri := compileWidgetRI(t, `
          running:
          - byExpression:
              expression: .status.conditions[] | select(.type == "Available") | .status
              expectedResult: "True"`)
	obj := widgetWithoutStatus(t)
	analysis, err := ri.Analyze(obj)
	if err != nil {
		t.Fatalf("analysis of a Widget without status: %v", err)
	}
	if analysis.Status != PhaseUndefined || analysis.TotalPods != 1 {
		t.Errorf("analysis = status %s, %d pods; want Undefined and 1 pod", analysis.Status, analysis.TotalPods)
	}
	if _, err := ri.Phase(obj); err == nil {
		t.Error("Phase reported no failure of the status expression")
	}
}

// TestUnnamedResourceInterfacesOfOneFileAllCount: Karta publishes RIs without a name; two of them in one file
// are both in force, each for its kind, instead of the second replacing the first.
func TestUnnamedResourceInterfacesOfOneFileAllCount(t *testing.T) {
	ri := func(kind string) string {
		return `
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: example.com, version: v1, kind: ` + kind + `}
      specDefinition:
        podTemplateSpecPath: .spec.template
`
	}
	parsed, err := ParseResourceInterfaces([]byte(ri("Widget")+"---"+ri("Gadget")), "examples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compiled []*Compiled
	for _, p := range parsed {
		c, err := Compile(p, "examples.yaml")
		if err != nil {
			t.Fatal(err)
		}
		compiled = append(compiled, c)
	}
	registry := NewRegistry(compiled...)
	for _, kind := range []string{"Widget", "Gadget"} {
		if _, ok := registry.Lookup(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: kind}); !ok {
			t.Errorf("no RI in force for %s", kind)
		}
	}
}

// TestAutoscaledDynamoServiceReservesItsSmallestScale: a Dynamo service with autoscaling enabled and no replicas
// runs one group of its multinode pods: the operator ignores the deprecated autoscaling field, and replicas
// defaults to 1.
func TestAutoscaledDynamoServiceReservesItsSmallestScale(t *testing.T) {
	ri, ok := builtinRegistry(t).Lookup(schema.GroupVersionKind{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoGraphDeployment"})
	if !ok {
		t.Fatal("no built-in DynamoGraphDeployment RI")
	}
	const nodes, gpus = 4, 8
	obj := jsonRoundTrip(t, map[string]any{"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
		"metadata": map[string]any{"name": "llm", "namespace": "team"},
		"spec": map[string]any{"services": map[string]any{"decode": map[string]any{
			"autoscaling": map[string]any{"enabled": true, "maxReplicas": 8},
			"multinode":   map[string]any{"nodeCount": nodes},
			"resources":   map[string]any{"requests": map[string]any{"gpu": "8"}},
		}}}})
	analysis, err := ri.Analyze(obj)
	if err != nil {
		t.Fatal(err)
	}
	gpuTotal := analysis.TotalRequests["nvidia.com/gpu"]
	if analysis.TotalPods != nodes || gpuTotal.Value() != nodes*gpus {
		t.Errorf("analysis = %d pods, %s GPUs; want one group of %d pods of %d GPUs", analysis.TotalPods, gpuTotal.String(), nodes, gpus)
	}
}

// TestEmptyStatusMatcherMatches: a status matcher with no byPhase, byConditions or byExpression is valid for
// Karta's CRD, and Karta's engine takes it as matching; the RI loads and maps every object to that status.
func TestEmptyStatusMatcherMatches(t *testing.T) {
	ri := compileWidgetRI(t, `
          running:
          - {}`)
	obj := widgetWithoutStatus(t)
	analysis, err := ri.Analyze(obj)
	if err != nil {
		t.Fatal(err)
	}
	if analysis.Status != PhaseRunning {
		t.Errorf("status %s, want Running", analysis.Status)
	}
}

// compileWidgetRI compiles an RI of example.com/v1 Widget, one pod per spec.template, whose root's
// statusMappings are the given YAML (indented under statusMappings).
func compileWidgetRI(t *testing.T, statusMappings string) *Compiled {
	t.Helper()
	ris, err := ParseResourceInterfaces([]byte(`
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: widget}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
      specDefinition:
        podTemplateSpecPath: .spec.template
      statusDefinition:
        statusMappings:`+statusMappings+"\n"), "widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ri, err := Compile(ris[0], "widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return ri
}

// widgetWithoutStatus is a Widget of one pod asking for 2 CPUs, with no status yet.
func widgetWithoutStatus(t *testing.T) map[string]any {
	t.Helper()
	return jsonRoundTrip(t, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "team"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "w", "resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}}}}}})
}
