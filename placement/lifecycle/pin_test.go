package lifecycle

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// applies decodes the Apply decisions among effects.
func applies(t *testing.T, effects []string) []schemas.PlacementDecided {
	t.Helper()
	var out []schemas.PlacementDecided
	for _, data := range effects {
		var e struct {
			Type    string
			Payload json.RawMessage
		}
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		if e.Type != schemas.TypePlacementDecided {
			continue
		}
		var d schemas.PlacementDecided
		if err := json.Unmarshal(e.Payload, &d); err != nil {
			t.Fatal(err)
		}
		if d.Action == schemas.ActionApply {
			out = append(out, d)
		}
	}
	return out
}

// pinningPolicy records a policy that fills the clusters in order and pins pods when pin is set.
func (h *history) pinningPolicy(name string, pin bool, clusters ...string) *history {
	spec := eventtest.FillInOrder(clusters...)
	spec["pinPods"] = pin
	p := eventtest.Policy(name, spec)
	return h.add(schemas.TypePolicyChanged, schemas.PolicySubject(p.Ref()), p)
}

func TestPinnedApplyGatesTemplatesAndCarriesPins(t *testing.T) {
	tests := []struct {
		name string
		pin  bool
	}{{name: "policy pins pods", pin: true}, {name: "policy does not", pin: false}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory().pinningPolicy("any", tt.pin, "east").cluster("east", "8")
			h.workload(eventtest.Deployment("web", "2"))
			got := applies(t, run(t, newController(t), h.events))
			if len(got) != 1 {
				t.Fatalf("%d applies, want 1", len(got))
			}
			d := got[0]
			template := d.Object["spec"].(map[string]any)["template"].(map[string]any)
			metadata, _ := template["metadata"].(map[string]any)
			gates, _ := template["spec"].(map[string]any)["schedulingGates"].([]any)
			if !tt.pin {
				if d.Pins != "" || d.SourceContent != "" || len(gates) > 0 || metadata != nil {
					t.Fatalf("unpinned Apply: pins %q, source content %q, gates %v, template metadata %v", d.Pins,
						d.SourceContent, gates, metadata)
				}
				return
			}
			pins, err := schemas.ParsePins(d.Pins)
			if err != nil {
				t.Fatal(err)
			}
			component := metadata["annotations"].(map[string]any)[schemas.AnnotationPinComponent]
			if len(pins) != 1 || pins[component.(string)]["n1"] != 1 {
				t.Fatalf("pins %s, want the one pod of component %v on n1", d.Pins, component)
			}
			if copyName := metadata["annotations"].(map[string]any)[schemas.AnnotationPinCopy]; copyName != "Deployment/apps/v1/web" {
				t.Fatalf("template names its copy %v", copyName)
			}
			if metadata["labels"].(map[string]any)[schemas.LabelPinned] != "true" {
				t.Fatalf("template labels %v lack %s", metadata["labels"], schemas.LabelPinned)
			}
			if !slices.ContainsFunc(gates, func(g any) bool { return g.(map[string]any)["name"] == schemas.SchedulingGatePinned }) {
				t.Fatalf("template gates %v lack %s", gates, schemas.SchedulingGatePinned)
			}
			if d.SourceContent == "" {
				t.Fatal("a gated copy does not say which control-plane object it was cut from")
			}
		})
	}
}

// A pinned copy judged again where it runs is not applied again while its object and pins stay.
func TestPinnedCopyIsNotAppliedAgainForTheSamePins(t *testing.T) {
	h := newHistory().pinningPolicy("any", true, "east").cluster("east", "8")
	h.workload(eventtest.Deployment("web", "6"))
	c := newController(t)
	if got := applies(t, run(t, c, h.events)); len(got) != 1 {
		t.Fatalf("%d applies at placement, want 1", len(got))
	}
	next := len(h.events)
	h.pinningPolicy("any", true, "east") // the same policy again: judged again, packed on n1 again
	if got := applies(t, run(t, c, h.events[next:])); len(got) != 0 {
		t.Fatalf("%d applies for the same pins, want none: %+v", len(got), got)
	}
}

func TestPinKeys(t *testing.T) {
	group := func(component string, cpu int64, path ...string) structs.PodGroup {
		return structs.PodGroup{Component: component, Request: structs.Vector{1, cpu}, PodTemplatePath: path}
	}
	tests := []struct {
		name   string
		groups []structs.PodGroup
		want   map[string]string
	}{
		{name: "a template each", groups: []structs.PodGroup{group("master", 1, "spec", "m"), group("worker", 2, "spec", "w")},
			want: map[string]string{"master": "master", "worker": "worker"}},
		{name: "one template, pods alike", groups: []structs.PodGroup{group("worker", 2, "spec", "w"), group("leader", 2, "spec", "w")},
			want: map[string]string{"leader": "leader+worker", "worker": "leader+worker"}},
		{name: "one template, pods unlike", groups: []structs.PodGroup{group("worker", 2, "spec", "w"), group("leader", 3, "spec", "w"),
			group("head", 1, "spec", "h")}, want: map[string]string{"head": "head"}},
		{name: "a template not in the CR", groups: []structs.PodGroup{group("submitter", 1), group("head", 1, "spec", "h")},
			want: map[string]string{"head": "head"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pinKeys(tt.groups); !maps.Equal(got, tt.want) {
				t.Fatalf("pinKeys = %v, want %v", got, tt.want)
			}
		})
	}
}

// A policy that starts or stops pinning pods has its copies applied again, gated or not.
func TestPinPodsTurnedOffAndOnAppliesAgain(t *testing.T) {
	h := newHistory().pinningPolicy("any", true, "east").cluster("east", "8")
	h.workload(eventtest.Deployment("web", "2"))
	c := newController(t)
	run(t, c, h.events)
	for _, pin := range []bool{false, true} {
		next := len(h.events)
		h.pinningPolicy("any", pin, "east")
		got := applies(t, run(t, c, h.events[next:]))
		if len(got) != 1 {
			t.Fatalf("pinPods %v: %d applies, want 1", pin, len(got))
		}
		template := got[0].Object["spec"].(map[string]any)["template"].(map[string]any)
		_, gated := template["spec"].(map[string]any)["schedulingGates"]
		if gated != pin || (got[0].Pins != "") != pin {
			t.Fatalf("pinPods %v: Apply gated %v with pins %q", pin, gated, got[0].Pins)
		}
	}
}
