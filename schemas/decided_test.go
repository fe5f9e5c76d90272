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

// TestPlacementDecidedCarriesOnlyWhatAnApplyMay: a verdict rides only with an Apply, only when Placed, only
// for the decision's own workload and a cluster the verdict names; the placement in force (clusters and
// clusters to avoid) and the namespace's labels come only with an Apply, and the clusters include its own.
// What is valid reads back as sent.
func TestPlacementDecidedCarriesOnlyWhatAnApplyMay(t *testing.T) {
	ref := ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "u"}
	placed := func() *PlacementVerdict {
		return &PlacementVerdict{Workload: ref, Sequence: 7, Epoch: "e1", Status: VerdictPlaced, Clusters: []string{"east"},
			Reasons: map[string]string{"west": "is not Ready"}, ReasonCodes: map[string]string{"west": "NotReady"}}
	}
	decision := func(change func(d *PlacementDecided)) *PlacementDecided {
		d := &PlacementDecided{DecisionID: "u/7/Apply/east", Workload: ref, Cluster: "east", Action: ActionApply, Sequence: 7,
			Epoch: "e1", Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": "web", "namespace": "team"}}, Verdict: placed(),
			Clusters: []string{"east"}, Avoid: map[string]string{"west": "its pods stayed Pending there"},
			NamespaceLabels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}
		change(d)
		return d
	}
	cases := []struct {
		name    string
		d       *PlacementDecided
		wantErr string
	}{
		{"a placed verdict with its Apply", decision(func(*PlacementDecided) {}), ""},
		{"with a Delete", decision(func(d *PlacementDecided) { d.Action, d.Object = ActionDelete, nil }), "only Apply carries one"},
		{"placement with a Delete", decision(func(d *PlacementDecided) { d.Action, d.Object, d.Verdict = ActionDelete, nil, nil }),
			"clusters, avoid, namespaceLabels: set on action Delete"},
		{"namespace labels with a Delete", decision(func(d *PlacementDecided) {
			d.Action, d.Object, d.Verdict, d.Clusters, d.Avoid = ActionDelete, nil, nil, nil, nil
		}), "namespaceLabels: set on action Delete"},
		{"placement without its cluster", decision(func(d *PlacementDecided) { d.Clusters = []string{"west"} }),
			"clusters: [west] do not include the decision's cluster east"},
		{"unschedulable", decision(func(d *PlacementDecided) { d.Verdict.Status = VerdictUnschedulable }), "only a Placed verdict"},
		{"another workload", decision(func(d *PlacementDecided) { d.Verdict.Workload.UID = "other" }), "is not the decision's workload"},
		{"another cluster", decision(func(d *PlacementDecided) { d.Verdict.Clusters = []string{"west"} }), "do not include the decision's cluster east"},
		{"an invalid verdict", decision(func(d *PlacementDecided) { d.Verdict.Sequence = 0 }), "verdict: sequence: must be positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.d.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				data, err := json.Marshal(tc.d)
				if err != nil {
					t.Fatal(err)
				}
				var back PlacementDecided
				if err := json.Unmarshal(data, &back); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(back.Verdict, tc.d.Verdict) || !reflect.DeepEqual(back.Clusters, tc.d.Clusters) ||
					!reflect.DeepEqual(back.Avoid, tc.d.Avoid) || !reflect.DeepEqual(back.NamespaceLabels, tc.d.NamespaceLabels) {
					t.Errorf("read back verdict %+v, clusters %v, avoid %v, namespace labels %v; want %+v, %v, %v, %v",
						back.Verdict, back.Clusters, back.Avoid, back.NamespaceLabels, tc.d.Verdict, tc.d.Clusters, tc.d.Avoid,
						tc.d.NamespaceLabels)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate = %v, want an error saying %q", err, tc.wantErr)
			}
		})
	}
}
