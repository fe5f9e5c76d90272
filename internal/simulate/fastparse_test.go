package simulate

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fastHead is the start of a fleet file, before its workloads.
const fastHead = "clusters:\n- name: a\n  nodes:\n  - name: node\n    allocatable: {cpu: \"4\"}\n"

// fastParseCases are fleet files parseFast takes (wantOK) or leaves to the general path.
var fastParseCases = []struct {
	name   string
	fleet  string
	wantOK bool
}{
	{"keys after the workloads", "workloads:\n- file: train.yaml\n" + fastHead + "policies: []\n", true},
	{"indented items, comments, blank lines", fastHead + "workloads:\n# first\n\n  - file: train.yaml\n    namespace: ns\n  # between\n  - object: {kind: K, metadata: {name: x}}\n", true},
	{"YAML 1.1 scalars", fastHead + `workloads:
- object:
    kind: K
    metadata: {name: x, labels: {a: "on"}}
    spec: {b: on, c: Off, d: y, e: ~, f: null, g: , h: 12, i: -3, j: 0.5, k: -1.25, l: 16Gi, m: 500m, nq: 'q', o: "",
      p: [], q: {}, r: [1, two, {s: t}], u: 1.0}
    status: |
      block
`, true},
	{"numbers YAML 1.1 reads otherwise", fastHead + "workloads:\n- object: {kind: K, a: 010, b: 0x1f, c: 1_000, d: 1e3, e: .inf, f: 2001-12-14, g: +1, h: -0}\n", false},
	{"bool key", fastHead + "workloads:\n- object: {kind: K, on: 1}\n", false},
	{"anchor and alias", fastHead + "workloads:\n- object: &o {kind: K}\n- object: *o\n", false},
	{"merge key", fastHead + "workloads:\n- object: {<<: {a: 1}, kind: K}\n", false},
	{"tag", fastHead + "workloads:\n- object: {kind: !!str K}\n", false},
	{"duplicate key", fastHead + "workloads:\n- object: {kind: K, kind: L}\n", false},
	{"field spelt in capitals", fastHead + "workloads:\n- File: train.yaml\n", false},
	{"unknown field", fastHead + "workloads:\n- files: train.yaml\n", false},
	{"boolean namespace", fastHead + "workloads:\n- file: train.yaml\n  namespace: no\n", false},
	{"quoted string cut across pieces", fastHead + "workloads:\n" + strings.Repeat("- file: train.yaml\n", itemsPerPiece-1) +
		"- object: {kind: \"K\n- x\"}\n", false},
	{"flow list of workloads", fastHead + "workloads: [{file: train.yaml}]\n", false},
	{"no workloads", fastHead, false},
	{"bad quantity", strings.Replace(fastHead, `"4"`, "four", 1) + "workloads:\n- file: train.yaml\n", false},
	{"CRLF", strings.ReplaceAll(fastHead+"workloads:\n- file: train.yaml\n", "\n", "\r\n"), false},
}

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
	tests := append([]struct {
		name   string
		fleet  string
		wantOK bool
	}{
		{"sample fleet", read("testdata/fleet.yaml"), true},
		{"fleetgen fleet, several pieces", read("testdata/fleetgen.yaml"), true},
	}, fastParseCases...)
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
