package app

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/schemas"
)

// TestClusterProducersFollowTheKindsResourceInterfacesDescribe: the kinds of the ResourceInterfaces the state
// stream holds are handed over at once, and those of RIs applied later as they come, so a cluster's producer
// reports the placed objects of a kind only a user's RI describes. So are the kinds a SchedulePolicy selects,
// named without a version, so a Duplicate ConfigMap deleted in its cluster is seen gone.
func TestClusterProducersFollowTheKindsResourceInterfacesDescribe(t *testing.T) {
	b := OpenTestBus(t)
	ri := func(name, group, kind string) *schemas.ObjectChanged {
		return &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "optimization.nvidia.com/v1alpha1", "kind": "ResourceInterface",
			"metadata": map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "1"},
			"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
				"name": "root", "kind": map[string]any{"group": group, "version": "v1", "kind": kind}}}}}}
	}
	publish := func(o *schemas.ObjectChanged) {
		t.Helper()
		PublishEvent(t, b, schemas.TypeResourceInterfaceChanged, schemas.ResourceInterfaceSubject(o.Ref()), "ri-"+o.Ref().Name, o)
	}
	publish(ri("widgets", "example.com", "Widget"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	kinds := make(chan schema.GroupVersionKind, 4)
	groupKinds := make(chan schema.GroupKind, 4)
	done := make(chan error, 1)
	go func() {
		done <- followNamedKinds(ctx, b.JetStream, func(gvk schema.GroupVersionKind) { kinds <- gvk },
			func(gk schema.GroupKind) { groupKinds <- gk })
	}()
	want := func(gvk schema.GroupVersionKind) {
		t.Helper()
		select {
		case got := <-kinds:
			if got != gvk {
				t.Fatalf("kind %v handed over, want %v", got, gvk)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("kind %v never handed over", gvk)
		}
	}
	want(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	publish(ri("gadgets", "example.org", "Gadget"))
	want(schema.GroupVersionKind{Group: "example.org", Version: "v1", Kind: "Gadget"})
	policy := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
		"metadata": map[string]any{"name": "copies", "uid": "uid-copies", "resourceVersion": "1"},
		"spec":     map[string]any{"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "", "kind": "ConfigMap"}}}}}}
	PublishEvent(t, b, schemas.TypePolicyChanged, schemas.PolicySubject(policy.Ref()), "policy-copies", policy)
	select {
	case got := <-groupKinds:
		if got != (schema.GroupKind{Kind: "ConfigMap"}) {
			t.Fatalf("kind %v handed over, want ConfigMap", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the kind the policy selects was never handed over")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("following ended with %v", err)
	}
}
