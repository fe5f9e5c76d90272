package karta

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRegistryHasGroupKind: a kind is known in any version once a built-in or a user RI analyzes it.
func TestRegistryHasGroupKind(t *testing.T) {
	builtins, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(builtins...)
	cases := []struct {
		group, kind string
		want        bool
	}{
		{"kubeflow.org", "PyTorchJob", true},
		{"kubeflow.org", "MPIJob", true},
		{"apps", "Deployment", true},
		{"", "Deployment", false},
		{"example.com", "Widget", false},
	}
	ris, err := ParseResourceInterfaces([]byte(`apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: widgets}
spec:
  structureDefinition:
    rootComponent:
      name: widget
      kind: {group: example.com, version: v1, kind: Widget}
`), "widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	widget, err := Compile(ris[0], "widget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if r.HasGroupKind("example.com", "Widget") || !r.With(widget).HasGroupKind("example.com", "Widget") {
		t.Error("a user RI's kind is known only in the registry that holds it")
	}
	for _, tc := range cases {
		if got := r.HasGroupKind(tc.group, tc.kind); got != tc.want {
			t.Errorf("HasGroupKind(%q, %q) = %t, want %t", tc.group, tc.kind, got, tc.want)
		}
	}
}

// TestRegistryPutsTheUserRICreatedLastInForce: of the user RIs of one kind, the one created last is in force,
// whatever order they are added in. Every restart of fleetflow past the streams' duplicate window publishes each
// RI again, in the order of their names, and the one added last was in force: a restart moved the kind to the
// RI of the last name. RIs without a creation time (files) keep the order they were added in.
func TestRegistryPutsTheUserRICreatedLastInForce(t *testing.T) {
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	t0 := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	ri := func(name string, created time.Time) *Compiled {
		return &Compiled{Name: name, GVK: widget, Created: created}
	}
	tests := []struct {
		name  string
		added []*Compiled
		want  string
	}{
		{"created last, added last", []*Compiled{ri("zeta", t0), ri("alpha", t0.Add(time.Minute))}, "alpha"},
		{"republished in the order of names after a restart",
			[]*Compiled{ri("zeta", t0), ri("alpha", t0.Add(time.Minute)), ri("alpha", t0.Add(time.Minute)), ri("zeta", t0)}, "alpha"},
		{"edited after a later one was created", []*Compiled{ri("alpha", t0), ri("zeta", t0.Add(time.Minute)), ri("alpha", t0)}, "zeta"},
		{"created in the same second: the later name", []*Compiled{ri("zeta", t0), ri("alpha", t0), ri("zeta", t0)}, "zeta"},
		{"without creation times: added last", []*Compiled{ri("zeta", time.Time{}), ri("alpha", time.Time{})}, "alpha"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRegistry()
			for _, c := range tt.added {
				r = r.With(c)
			}
			if got, ok := r.Lookup(widget); !ok || got.Name != tt.want {
				t.Errorf("in force: %v (found %v), want %s", got, ok, tt.want)
			}
		})
	}
}
