package policy

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// fuzzLabels are the label sets a compiled policy is asked about: none, some a policy may name, and odd ones.
var fuzzLabels = []map[string]string{nil, {"tier": "gold", "region": "eu", "name": "east"}, {"team": "a", "provider": "onprem"},
	{"": "", "x/": "y", "region": "us"}}

// FuzzCompile reads a SchedulePolicy as the placer does from its changed event (the object's JSON, through
// the unstructured converter) and compiles it: the result is a policy that answers every question, or a
// *ValidationError whose every entry names a field and a reason. Compile leaves its input alone and answers
// the same twice, and the policy written back to an object and read again compiles to the same answer.
func FuzzCompile(f *testing.F) {
	seed := func(spec map[string]any) {
		data, err := json.Marshal(eventtest.Policy("fuzz", spec).Object)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	seed(eventtest.FillInOrder("east", "west"))
	seed(map[string]any{"priority": 10, "scoring": "Spread", "namespaceSelector": map[string]any{"matchLabels": map[string]any{"tier": "gold"}},
		"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "kubeflow.org", "kind": "PyTorchJob"}},
			"labelSelectors": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "team", "operator": "In", "values": []any{"a", "b"}}}}}},
		"clusterSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "region", "operator": "NotIn", "values": []any{"us"}}}},
		"tolerations":     []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}}})
	seed(map[string]any{"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "apps", "kind": "Deployment"}}},
		"spreadConstraints": map[string]any{"spreadMode": "Divide", "topologyKey": "region",
			"percentageSplit": []any{map[string]any{"topologyValue": "eu", "percentage": 50}, map[string]any{"topologyValue": "us", "percentage": 50}}}})
	seed(map[string]any{"spreadConstraints": map[string]any{"spreadMode": "Duplicate"}, "capacityAware": false})
	seed(map[string]any{"groupBy": map[string]any{"labelKey": "fleetflow.io/group"}, "scoring": "Random",
		"tolerations": []any{map[string]any{"key": "maintenance", "operator": "Equal", "value": "x y", "tolerationSeconds": 60}}})
	seed(map[string]any{"clusterSelector": map[string]any{"matchLabels": map[string]any{"bad key!": "x"}},
		"orderedClusterSelector": map[string]any{"tiers": []any{}}})
	f.Add([]byte(`{"metadata":{"name":""},"spec":{"priority":"high"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return // policies are far smaller; a bigger input only slows the fuzzer
		}
		var object map[string]any
		if json.Unmarshal(data, &object) != nil || object == nil {
			return // an event's object is a JSON object, or the event does not decode
		}
		var sp v1alpha1.SchedulePolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object, &sp); err != nil {
			if err.Error() == "" {
				t.Fatal("the converter failed with an empty message")
			}
			return
		}
		input := sp.DeepCopy()
		compiled, err := Compile(&sp, kindInfo)
		if !reflect.DeepEqual(input, &sp) {
			t.Fatalf("Compile changed its input:\nbefore %#v\nafter  %#v", input, &sp)
		}
		if _, again := Compile(&sp, kindInfo); errorText(again) != errorText(err) {
			t.Fatalf("Compile answered %q, then %q", errorText(err), errorText(again))
		}
		checkValidationError(t, err)
		if err == nil {
			checkCompiled(t, compiled, &sp)
		}

		// What the status writer and a replay read is the policy written back to an object.
		written, convErr := runtime.DefaultUnstructuredConverter.ToUnstructured(&sp)
		if convErr != nil {
			t.Fatalf("a policy read from an object does not convert back: %v", convErr)
		}
		var reread v1alpha1.SchedulePolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(written, &reread); err != nil {
			t.Fatalf("a policy written back does not read: %v", err)
		}
		if _, again := Compile(&reread, kindInfo); errorText(again) != errorText(err) {
			t.Fatalf("Compile answered %q, and %q on the policy written back and read again", errorText(err), errorText(again))
		}
	})
}

func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkValidationError: a refusal is a *ValidationError listing at least one problem, each with its field and why.
func checkValidationError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("error %v (%T) is no *ValidationError", err, err)
	}
	if len(verr.Errors) == 0 {
		t.Fatalf("a refusal without a reason: %v", err)
	}
	for _, fe := range verr.Errors {
		if fe.Path == "" || fe.Reason == "" {
			t.Fatalf("a problem without its field or reason %+v in %v", fe, err)
		}
	}
}

// checkCompiled asks a compiled policy every question placement asks, on a few label sets.
func checkCompiled(t *testing.T, p *Policy, sp *v1alpha1.SchedulePolicy) {
	t.Helper()
	if p.Name != sp.Name || p.Priority != sp.Spec.Priority {
		t.Fatalf("compiled %s priority %d from %s priority %d", p.Name, p.Priority, sp.Name, sp.Spec.Priority)
	}
	kinds := append([]v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}, sp.Spec.ResourceSelectors.Kinds...)
	for _, gk := range kinds {
		for _, workload := range fuzzLabels {
			for _, ns := range fuzzLabels {
				if m := p.MatchWorkload(gk.Group, gk.Kind, workload, ns); m.Selects() != p.SelectsWorkload(gk.Group, gk.Kind, workload, ns) {
					t.Fatalf("MatchWorkload %+v disagrees with SelectsWorkload on %s %v %v", m, groupKind(gk), workload, ns)
				}
			}
		}
	}
	for _, cluster := range fuzzLabels {
		p.SelectsCluster(cluster)
		if tier := p.Tier(cluster); tier < -1 || tier >= p.Tiers() {
			t.Fatalf("tier %d of %v is outside -1..%d", tier, cluster, p.Tiers()-1)
		}
	}
	if s := p.Scoring(); s != v1alpha1.ScoringBinPack && s != v1alpha1.ScoringSpread {
		t.Fatalf("scoring %q", s)
	}
}
