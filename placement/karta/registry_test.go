package karta

import "testing"

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
