package simulate

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestParseFastDecodesAsTheGeneralPath checks that parseFast, when it takes a file, gives the File that
// yaml.UnmarshalStrict gives, and that it takes the usual fleet files.
func TestParseFastDecodesAsTheGeneralPath(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	const head = "clusters:\n- name: a\n  nodes:\n  - name: node\n    allocatable: {cpu: \"4\"}\n"
	tests := []struct {
		name   string
		fleet  string
		wantOK bool
	}{
		{"sample fleet", read("testdata/fleet.yaml"), true},
		{"fleetgen fleet, several pieces", read("testdata/fleetgen.yaml"), true},
		{"keys after the workloads", "workloads:\n- file: train.yaml\n" + head + "policies: []\n", true},
		{"indented items, comments, blank lines", head + "workloads:\n# first\n\n  - file: train.yaml\n    namespace: ns\n  # between\n  - object: {kind: K, metadata: {name: x}}\n", true},
		{"YAML 1.1 scalars", head + `workloads:
- object:
    kind: K
    metadata: {name: x, labels: {a: "on"}}
    spec: {b: on, c: Off, d: y, e: ~, f: null, g: , h: 12, i: -3, j: 0.5, k: -1.25, l: 16Gi, m: 500m, nq: 'q', o: "",
      p: [], q: {}, r: [1, two, {s: t}], u: 1.0}
    status: |
      block
`, true},
		{"numbers YAML 1.1 reads otherwise", head + "workloads:\n- object: {kind: K, a: 010, b: 0x1f, c: 1_000, d: 1e3, e: .inf, f: 2001-12-14, g: +1, h: -0}\n", false},
		{"bool key", head + "workloads:\n- object: {kind: K, on: 1}\n", false},
		{"anchor and alias", head + "workloads:\n- object: &o {kind: K}\n- object: *o\n", false},
		{"merge key", head + "workloads:\n- object: {<<: {a: 1}, kind: K}\n", false},
		{"tag", head + "workloads:\n- object: {kind: !!str K}\n", false},
		{"duplicate key", head + "workloads:\n- object: {kind: K, kind: L}\n", false},
		{"field spelt in capitals", head + "workloads:\n- File: train.yaml\n", false},
		{"unknown field", head + "workloads:\n- files: train.yaml\n", false},
		{"boolean namespace", head + "workloads:\n- file: train.yaml\n  namespace: no\n", false},
		{"quoted string cut across pieces", head + "workloads:\n" + strings.Repeat("- file: train.yaml\n", itemsPerPiece-1) +
			"- object: {kind: \"K\n- x\"}\n", false},
		{"flow list of workloads", head + "workloads: [{file: train.yaml}]\n", false},
		{"no workloads", head, false},
		{"bad quantity", strings.Replace(head, `"4"`, "four", 1) + "workloads:\n- file: train.yaml\n", false},
		{"CRLF", strings.ReplaceAll(head+"workloads:\n- file: train.yaml\n", "\n", "\r\n"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok := parseFast([]byte(tt.fleet))
			if ok != tt.wantOK {
				t.Fatalf("parseFast took the file: %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			var want File
			if err := yaml.UnmarshalStrict([]byte(tt.fleet), &want); err != nil {
				t.Fatalf("general path: %v", err)
			}
			if !reflect.DeepEqual(*fast, want) {
				t.Errorf("parseFast gave\n%#v\nthe general path\n%#v", *fast, want)
			}
		})
	}
}

// TestParseFastFallsBackWithTheSameError checks that a file the fast path refuses fails as before, naming the
// file and the line.
func TestParseFastFallsBackWithTheSameError(t *testing.T) {
	fleet := "clusters:\n- name: a\n  nodes:\n  - name: node\n    allocatable: {cpu: \"4\"}\nworkloads:\n- file: train.yaml\n  file: other.yaml\n"
	_, err := Parse([]byte(fleet), "fleet.yaml", "testdata")
	if err == nil || !strings.Contains(err.Error(), "fleet file fleet.yaml") || !strings.Contains(err.Error(), "line 8") {
		t.Errorf("error = %v, want one naming fleet.yaml and line 8", err)
	}
}
