package codec_test

import (
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

func TestNewEventRefusesInvalidPayloadsAndUnknownTypes(t *testing.T) {
	if _, err := codec.NewEvent("io.example.other", "/x", "s", "id", &schemas.WorkloadChanged{}); err == nil {
		t.Error("NewEvent accepted an undefined event type")
	}
	if _, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/x", "s", "id", &schemas.WorkloadChanged{}); err == nil {
		t.Error("NewEvent accepted an invalid payload")
	}
}

// TestBadQuantityInAPayloadIsNamedByItsField: a quantity that does not parse fails the event with the path of
// its field and its value; the quantity's own error names neither.
func TestBadQuantityInAPayloadIsNamedByItsField(t *testing.T) {
	cases := []struct {
		name, data, want string
	}{
		{"allocatable", `{"cluster":"c","name":"n","ready":true,"pods":0,"allocatable":{"cpu":"4","memory":"lots"}}`,
			`allocatable.memory: "lots" is no quantity`},
		{"a workload's requests", `{"cluster":"c","name":"n","ready":true,"pods":1,"allocatable":{"cpu":"4"},` +
			`"workloadRequested":{"uid-a":{"cpu":"1"},"uid-b":{"nvidia.com/gpu":"two"}}}`,
			`workloadRequested.uid-b.nvidia.com/gpu: "two" is no quantity`},
		{"a quantity that is an object", `{"cluster":"c","name":"n","ready":true,"pods":0,"allocatable":{"cpu":{"value":4}}}`,
			`allocatable.cpu: map[value:4] is no quantity`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := cloudevents.New()
			e.SetID("id-1")
			e.SetSource("/test")
			e.SetType(schemas.TypeNodeChanged)
			if err := e.SetData(schemas.ContentTypeJSON, []byte(tc.data)); err != nil {
				t.Fatal(err)
			}
			_, err := codec.DecodePayload(e)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "id-1") {
				t.Errorf("DecodePayload error = %v, want one naming the event and %q", err, tc.want)
			}
		})
	}
}

// TestDecisionCarryingAVerdictSaysSoInItsAttributes: a decision that carries a verdict is marked with the
// verdict extension attribute, set to its status, so a reader that wants only verdicts can skip the others
// without decoding them; a decision without one is not marked.
func TestDecisionCarryingAVerdictSaysSoInItsAttributes(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "u"}
	object := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "team"}}
	for _, tc := range []struct {
		name    string
		verdict *schemas.PlacementVerdict
		want    any
	}{
		{"carrying its Placed verdict", &schemas.PlacementVerdict{Workload: ref, Sequence: 7, Status: schemas.VerdictPlaced, Clusters: []string{"east"}}, "Placed"},
		{"without a verdict", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &schemas.PlacementDecided{DecisionID: "u/7/Apply/east", Workload: ref, Cluster: "east", Action: schemas.ActionApply, Sequence: 7,
				Object: object, Verdict: tc.verdict}
			e, err := codec.NewEvent(schemas.TypePlacementDecided, schemas.SourcePlacer, schemas.DecisionSubject("east", ref), d.DecisionID, d)
			if err != nil {
				t.Fatal(err)
			}
			if got := e.Extensions()[schemas.ExtensionVerdict]; got != tc.want {
				t.Errorf("verdict attribute = %v, want %v", got, tc.want)
			}
		})
	}
}
