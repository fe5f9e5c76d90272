package fleetspec

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// validFleet uses every field of a fleet file.
const validFleet = `
namespaces:
  team-a:
    labels: {tier: gold}
clusters:
- name: east
  labels: {region: us-east}
  taints:
  - {key: maintenance, effect: NoSchedule}
  apis: ["kubeflow.org/v2beta1/TrainJob", "v1/Pod"]
  nodes:
  - name: gpu
    count: 2
    labels: {nvidia.com/gpu.product: H100}
    taints:
    - {key: nvidia.com/gpu, value: present, effect: NoSchedule}
    allocatable: {cpu: "64", memory: 512Gi, nvidia.com/gpu: 8}
    requested: {cpu: 1500m, nvidia.com/gpu: 2}
  - name: cpu-only
    allocatable: {cpu: 32, memory: 128Gi}
    unschedulable: true
- name: west
  ready: false
  nodes:
  - name: small
    allocatable: {cpu: 4}
`

func TestParseValidFleet(t *testing.T) {
	data := []byte(validFleet)
	fleet, err := Parse(data, "inline")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := len(fleet.Clusters); got != 2 {
		t.Fatalf("clusters: got %d, want 2", got)
	}
	east, west := fleet.Clusters[0], fleet.Clusters[1]
	if !east.IsReady() || west.IsReady() {
		t.Errorf("readiness: east %v west %v, want true false (ready defaults to true)", east.IsReady(), west.IsReady())
	}
	if got := fleet.Namespaces["team-a"].Labels["tier"]; got != "gold" {
		t.Errorf("namespace label tier: got %q, want gold", got)
	}
	gpu := east.Nodes[0]
	// "64" as a string and 8 as a YAML number must both become quantities.
	wantAllocatable := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		"nvidia.com/gpu":      resource.MustParse("8"),
	}
	assertResources(t, "east gpu allocatable", gpu.Allocatable, wantAllocatable)
	assertResources(t, "east gpu requested", gpu.Requested, corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1.5"),
		"nvidia.com/gpu":   resource.MustParse("2"),
	})
	if gpu.Taints[0].Effect != corev1.TaintEffectNoSchedule || gpu.Taints[0].Value != "present" {
		t.Errorf("gpu taint: got %+v", gpu.Taints[0])
	}
	if !east.Nodes[1].Unschedulable {
		t.Errorf("cpu-only: want unschedulable")
	}
}

// parseRejects each break exactly one rule; the expected path is where a user has to look in the file.
var parseRejects = []struct {
	name     string
	yaml     string
	wantPath string
	wantText string
}{
	{"unknown top-level field", "clusterz: []\nclusters: [{name: a}]", "", `unknown field "clusterz"`},
	{"unknown node field", "clusters: [{name: a, nodes: [{name: n1, allocatable: {cpu: 1}, gpus: 2}]}]", "", `unknown field "gpus"`},
	{"no clusters", "namespaces: {}", "clusters", "required"},
	{"missing cluster name", "clusters: [{name: a}, {labels: {x: z}}]", "clusters[1].name", "required"},
	{"cluster name not a DNS label", "clusters: [{name: East_1}]", "clusters[0].name", "invalid cluster name"},
	{"duplicate cluster", "clusters: [{name: a}, {name: b}, {name: a}]", "clusters[2].name", "duplicate cluster name"},
	{"missing allocatable", "clusters: [{name: a, nodes: [{name: n1, allocatable: {cpu: 1}}]}, {name: b, nodes: [{name: n1}]}]", "clusters[1].nodes[0].allocatable", "required"},
	{"missing node name", "clusters: [{name: a, nodes: [{allocatable: {cpu: 1}}]}]", "clusters[0].nodes[0].name", "required"},
	{"negative count", "clusters: [{name: a, nodes: [{name: n1, count: -1, allocatable: {cpu: 1}}]}]", "clusters[0].nodes[0].count", "must be 0 to 100000, got -1"},
	{"count past the bound", "clusters: [{name: a, nodes: [{name: n1, count: 100000000, allocatable: {cpu: 1}}]}]", "clusters[0].nodes[0].count", "must be 0 to 100000, got 100000000"},
	{"second document", "clusters: [{name: a}]\n---\n# more\nclusters: [{name: b}]\n", "", "holds 2 YAML documents; a fleet file is one document"},
	{"negative quantity", "clusters: [{name: a, nodes: [{name: n1, allocatable: {cpu: -1}}]}]", "clusters[0].nodes[0].allocatable[cpu]", "must not be negative"},
	{"requested beyond allocatable", "clusters: [{name: a, nodes: [{name: n1, allocatable: {cpu: 4}, requested: {cpu: 5}}]}]", "clusters[0].nodes[0].requested[cpu]", "exceeds allocatable 4"},
	{"requested resource not allocatable", "clusters: [{name: a, nodes: [{name: n1, allocatable: {cpu: 4}, requested: {nvidia.com/gpu: 1}}]}]", "clusters[0].nodes[0].requested[nvidia.com/gpu]", "not in allocatable"},
	{"bad quantity", "clusters: [{name: a, nodes: [{name: node, allocatable: {cpu: lots}}]}]", "clusters[0].nodes[0].allocatable[cpu]", "lots is no quantity"},
	{"quoted number that is no quantity", "clusters: [{name: a, nodes: [{name: node, allocatable: {cpu: '1_000'}}]}]", "clusters[0].nodes[0].allocatable[cpu]", "1_000 is no quantity"},
	{"null quantity", "clusters: [{name: a, nodes: [{name: node, allocatable: {cpu: }}]}]", "clusters[0].nodes[0].allocatable[cpu]", "null is no quantity"},
	{"list for a quantity", "clusters: [{name: a, nodes: [{name: node, allocatable: {cpu: [1]}}]}]", "clusters[0].nodes[0].allocatable[cpu]", "got a YAML list or map"},
	{"second bad quantity, by name", "clusters: [{name: a, nodes: [{name: node, allocatable: {memory: 1Gi, cpu: 1, z: lots}}]}]", "clusters[0].nodes[0].allocatable[z]", "lots is no quantity"},
	{"bad taint effect", "clusters: [{name: a, taints: [{key: k, effect: Sometimes}]}]", "clusters[0].taints[0].effect", "must be one of"},
	{"taint without key", "clusters: [{name: a, nodes: [{name: n1, allocatable: {cpu: 1}, taints: [{effect: NoSchedule}]}]}]", "clusters[0].nodes[0].taints[0].key", "required"},
	{"node name YAML reads as a boolean", "clusters: [{name: a, nodes: [{name: n, allocatable: {cpu: 1}}]}]", "clusters[0].nodes[0].name",
		"want a string, got n, which YAML reads as a boolean (quote it"},
	{"label value YAML reads as a boolean", "clusters: [{name: a, labels: {gpu: on}}]", "clusters[0].labels[gpu]",
		"want a string, got on, which YAML reads as a boolean (quote it"},
	{"namespace label YAML reads as a boolean", "namespaces: {team: {labels: {gold: Yes}}}\nclusters: [{name: a}]",
		"namespaces[team].labels[gold]", "got Yes, which YAML reads as a boolean"},
	{"label key YAML reads as a boolean", "clusters: [{name: a, labels: {on: x}}]", "clusters[0].labels[on]",
		"key want a string, got on"},
	{"bad label value", "clusters: [{name: a, labels: {zone: 'not ok'}}]", "clusters[0].labels[zone]", "invalid label value"},
	{"bad api", "clusters: [{name: a, apis: [PyTorchJob]}]", "clusters[0].apis[0]", "want group/version/Kind"},
	{"api kind lower case", "clusters: [{name: a, apis: [kubeflow.org/v1/pytorchjob]}]", "clusters[0].apis[0]", "upper-case"},
	{"bad namespace name", "namespaces: {Team_A: {}}\nclusters: [{name: a}]", "namespaces[Team_A]", "invalid namespace name"},
	// gpu with count 2 yields gpu-0 and gpu-1, so a single node literally named gpu-1 collides with it.
	{"expanded node names collide", "clusters: [{name: a, nodes: [{name: gpu, count: 2, allocatable: {cpu: 1}}, {name: gpu-1, allocatable: {cpu: 1}}]}]", "clusters[0].nodes[1].name", `node "gpu-1" is also produced by clusters[0].nodes[0]`},
}

func TestParseRejects(t *testing.T) {
	for _, tt := range parseRejects {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "case.yaml")
			if err == nil {
				t.Fatalf("Parse accepted %q", tt.yaml)
			}
			if !strings.Contains(err.Error(), "case.yaml") {
				t.Errorf("error does not name the source: %v", err)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not contain %q", err, tt.wantText)
			}
			if tt.wantPath == "" {
				return
			}
			var fieldErr *FieldError
			if !errors.As(err, &fieldErr) {
				t.Fatalf("error %v has no *FieldError", err)
			}
			if !hasFieldError(err, tt.wantPath) {
				t.Errorf("error %q: no field error at path %q", err, tt.wantPath)
			}
		})
	}
}

func TestParseReportsAllProblems(t *testing.T) {
	_, err := Parse([]byte("clusters: [{name: a, nodes: [{name: n1}]}, {}]"), "two.yaml")
	for _, path := range []string{"clusters[0].nodes[0].allocatable", "clusters[1].name"} {
		if !hasFieldError(err, path) {
			t.Errorf("error %v: missing %s", err, path)
		}
	}
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name  string
		group NodeGroup
		want  []string
	}{
		{"count zero is one node with the group name", NodeGroup{Name: "head"}, []string{"head"}},
		{"count one is suffixed", NodeGroup{Name: "gpu", Count: 1}, []string{"gpu-0"}},
		{"count three", NodeGroup{Name: "gpu", Count: 3}, []string{"gpu-0", "gpu-1", "gpu-2"}},
		{"negative count is nothing", NodeGroup{Name: "gpu", Count: -2}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := tt.group.Expand()
			var names []string
			for _, n := range nodes {
				names = append(names, n.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Errorf("names: got %v, want %v", names, tt.want)
			}
		})
	}
}

func TestExpandCopiesPerNode(t *testing.T) {
	group := NodeGroup{
		Name:          "gpu",
		Count:         2,
		Labels:        map[string]string{"pool": "a"},
		Taints:        []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}},
		Allocatable:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
		Requested:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Unschedulable: true,
	}
	nodes := group.Expand()
	for _, n := range nodes {
		if n.Labels["pool"] != "a" || len(n.Taints) != 1 || !n.Unschedulable {
			t.Errorf("node %s does not carry the group's fields: %+v", n.Name, n)
		}
		assertResources(t, n.Name+" allocatable", n.Allocatable, group.Allocatable)
		assertResources(t, n.Name+" requested", n.Requested, group.Requested)
	}
	nodes[0].Labels["pool"] = "changed"
	nodes[0].Taints[0].Key = "changed"
	nodes[0].Allocatable[corev1.ResourceCPU] = resource.MustParse("1")
	if nodes[1].Labels["pool"] != "a" || nodes[1].Taints[0].Key != "k" || group.Labels["pool"] != "a" {
		t.Errorf("changing one node leaked into its sibling or the group")
	}
	if q := nodes[1].Allocatable[corev1.ResourceCPU]; q.Cmp(resource.MustParse("8")) != 0 {
		t.Errorf("sibling allocatable changed to %s", q.String())
	}
}

func TestAllNodes(t *testing.T) {
	cluster := Cluster{Name: "c", Nodes: []NodeGroup{{Name: "a", Count: 2}, {Name: "b"}}}
	var names []string
	for _, n := range cluster.AllNodes() {
		names = append(names, n.Name)
	}
	if got := strings.Join(names, ","); got != "a-0,a-1,b" {
		t.Errorf("AllNodes: got %s, want a-0,a-1,b", got)
	}
}

// TestDemoFleet keeps the fleet file used by the demo and the tests valid.
func TestDemoFleet(t *testing.T) {
	path := filepath.Join("..", "..", "deploy", "fleets", "demo.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read demo fleet: %v", err)
	}
	fleet, err := Parse(data, path)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(fleet.Clusters) != 3 {
		t.Errorf("demo fleet: got %d clusters, want 3", len(fleet.Clusters))
	}
	var gpuNodes, cpuNodes int
	for _, c := range fleet.Clusters {
		for _, n := range c.AllNodes() {
			if _, ok := n.Allocatable["nvidia.com/gpu"]; ok {
				gpuNodes++
			} else {
				cpuNodes++
			}
		}
	}
	if gpuNodes == 0 || cpuNodes == 0 {
		t.Errorf("demo fleet: want both GPU and CPU nodes, got %d GPU and %d CPU", gpuNodes, cpuNodes)
	}
}

func hasFieldError(err error, path string) bool {
	var joined interface{ Unwrap() []error }
	for err != nil {
		var fieldErr *FieldError
		if errors.As(err, &joined) {
			for _, e := range joined.Unwrap() {
				if errors.As(e, &fieldErr) && fieldErr.Path == path {
					return true
				}
			}
			return false
		}
		if errors.As(err, &fieldErr) {
			return fieldErr.Path == path
		}
		err = errors.Unwrap(err)
	}
	return false
}

func assertResources(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.Cmp(w) != 0 {
			t.Errorf("%s[%s]: got %s, want %s", what, name, g.String(), w.String())
		}
	}
}

// TestParseKeepsWhatYAMLReadsBackAsWritten: unquoted true, false and numbers where strings are meant read back as
// written, so they are not refused as y, n, yes, no, on and off are.
func TestParseKeepsWhatYAMLReadsBackAsWritten(t *testing.T) {
	fleet, err := Parse([]byte("clusters: [{name: a, labels: {gpu: true, spot: false, count: 8}}]"), "kept.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"gpu": "true", "spot": "false", "count": "8"}
	if got := fleet.Clusters[0].Labels; !maps.Equal(got, want) {
		t.Errorf("labels = %v, want %v", got, want)
	}
}

// TestParseAcceptsPlainNumbers: a quantity written as a plain YAML number is one, however it is spelt; the
// quantity check must not refuse what decoding reads as a number.
func TestParseAcceptsPlainNumbers(t *testing.T) {
	tests := []struct{ spelling, want string }{
		{"8", "8"},
		{"1_000", "1k"},
		{"1e3", "1k"},
		{"0.5", "500m"},
	}
	for _, tt := range tests {
		t.Run(tt.spelling, func(t *testing.T) {
			fleet, err := Parse([]byte("clusters: [{name: a, nodes: [{name: node, allocatable: {cpu: "+tt.spelling+"}}]}]"), "case.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := fleet.Clusters[0].Nodes[0].Allocatable["cpu"]
			if got.String() != tt.want {
				t.Errorf("cpu = %s, want %s", got.String(), tt.want)
			}
		})
	}
}

func TestDeclaredNodes(t *testing.T) {
	tests := []struct {
		yaml string
		want int
	}{
		{"clusters: [{name: a, nodes: [{name: n, count: 3}, {name: m}]}, {name: b, nodes: [{name: n, count: 2}]}]", 6},
		{"clusters: [{name: a}]", 0},
		{"clusters: {name: a}", 0}, // does not decode
	}
	for _, tt := range tests {
		if got := DeclaredNodes([]byte(tt.yaml)); got != tt.want {
			t.Errorf("DeclaredNodes(%s) = %d, want %d", tt.yaml, got, tt.want)
		}
	}
}
