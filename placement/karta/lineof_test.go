package karta

import "testing"

// TestLineOfFindsAFieldsKey: a field's line is its key's, in a document after others, in a List's item, in a
// list element named by its name or index, and in bracketed keys; a field not there gives its document's line.
func TestLineOfFindsAFieldsKey(t *testing.T) {
	stream := `apiVersion: v1
kind: ConfigMap
metadata: {name: other}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    a.b/c: "1"
spec:
  template:
    spec:
      containers:
      - name: side
      - name: web
        resources:
          requests:
            nvidia.com/gpu: "-1"
---
apiVersion: v1
kind: List
items:
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: a}}
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: b
`
	objects, err := ParseObjects([]byte(stream), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		object int
		path   string
		want   int
	}{
		{1, "metadata.annotations[a.b/c]", 10},
		{1, "spec.template.spec.containers[web].resources.requests[nvidia.com/gpu]", 19},
		{1, "spec.template.spec.containers[0]", 15},
		{1, "spec.template.spec.containers[web]", 16},
		{1, "spec.replicas", 5},
		{3, "metadata.name", 28},
		{2, "metadata.name", 24},
	}
	for _, tt := range tests {
		if got := objects[tt.object].LineOf(tt.path); got != tt.want {
			t.Errorf("object %d: LineOf(%s) = %d, want %d", tt.object, tt.path, got, tt.want)
		}
	}
}

// TestCheckNameRefusesANamelessObject: a name or a generateName will do; neither is refused by field.
func TestCheckNameRefusesANamelessObject(t *testing.T) {
	for _, tt := range []struct {
		meta map[string]any
		ok   bool
	}{{map[string]any{"name": "a"}, true}, {map[string]any{"generateName": "a-"}, true}, {map[string]any{}, false}, {nil, false}} {
		err := CheckName(map[string]any{"metadata": tt.meta})
		if (err == nil) != tt.ok || (err != nil && err.Error()[:len("metadata.name")] != "metadata.name") {
			t.Errorf("CheckName(%v) = %v, want ok %t", tt.meta, err, tt.ok)
		}
	}
}
