package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestPlacementDecidedWritesPreEncodedObject: a decision sent with ObjectJSON reads back exactly like
// one whose object encoding/json encoded, so receivers cannot tell the two apart.
func TestPlacementDecidedWritesPreEncodedObject(t *testing.T) {
	object := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "team"}, "spec": map[string]any{"replicas": float64(2)}}
	encoded, err := json.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	base := PlacementDecided{DecisionID: "u/7/Apply/east", Cluster: "east", Action: ActionApply, Sequence: 7,
		Workload: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "u"},
		Object:   object, Policy: "all"}
	preEncoded := base
	preEncoded.ObjectJSON = encoded

	for name, p := range map[string]*PlacementDecided{"plain": &base, "pre-encoded": &preEncoded} {
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back PlacementDecided
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.ObjectJSON != nil {
			t.Errorf("%s: ObjectJSON came off the wire", name)
		}
		want := base
		if !reflect.DeepEqual(back, want) {
			t.Errorf("%s: read back %+v\nwant %+v", name, back, want)
		}
	}
	pre, _ := json.Marshal(&preEncoded)
	if n := strings.Count(string(pre), `"object":`); n != 1 {
		t.Errorf("the object is written %d times: %s", n, pre)
	}
}

func TestPlacementDecidedApplyNeedsAnObject(t *testing.T) {
	d := PlacementDecided{DecisionID: "u/7/Apply/east", Cluster: "east", Action: ActionApply, Sequence: 7,
		Workload: ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "u"}}
	if err := d.Validate(); err == nil || !strings.Contains(err.Error(), "object: required") {
		t.Errorf("Validate without an object = %v, want object: required", err)
	}
	d.ObjectJSON = json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"team"}}`)
	if err := d.Validate(); err != nil {
		t.Errorf("Validate with a pre-encoded object = %v", err)
	}
}
