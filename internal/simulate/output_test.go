package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// resultBuilder builds a Result for the output tests.
type resultBuilder struct{ r Result }

func aResult(workload, status string) *resultBuilder {
	return &resultBuilder{r: Result{Workload: workload, Status: status, Clusters: []string{}, Reasons: map[string]string{}}}
}

func (b *resultBuilder) policy(name string) *resultBuilder { b.r.Policy = &name; return b }

func (b *resultBuilder) placedOn(clusters ...string) *resultBuilder {
	b.r.Clusters = clusters
	return b
}

// passedOver gives each of clusters the same reason.
func (b *resultBuilder) passedOver(reason string, clusters ...string) *resultBuilder {
	for _, c := range clusters {
		b.r.Reasons[c] = reason
	}
	return b
}

func (b *resultBuilder) pods(node, component string, n int64) *resultBuilder {
	if b.r.Pods == nil {
		b.r.Pods = map[string]map[string]int64{}
	}
	if b.r.Pods[node] == nil {
		b.r.Pods[node] = map[string]int64{}
	}
	b.r.Pods[node][component] = n
	return b
}

func (b *resultBuilder) build() Result { return b.r }

// clusterNames is c00, c01, ... c(n-1).
func clusterNames(from, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("c%02d", from+i)
	}
	return names
}

func TestGroupReasons(t *testing.T) {
	tests := []struct {
		name    string
		reasons map[string]string
		want    []ReasonGroup
	}{
		{"none", map[string]string{}, []ReasonGroup{}},
		{"one reason for all", map[string]string{"b": "no GPU", "a": "no GPU"},
			[]ReasonGroup{{Reason: "no GPU", Clusters: []string{"a", "b"}}}},
		{"the reason of most clusters first", map[string]string{"a": "tainted", "b": "no GPU", "c": "no GPU"},
			[]ReasonGroup{{Reason: "no GPU", Clusters: []string{"b", "c"}}, {Reason: "tainted", Clusters: []string{"a"}}}},
		{"ties by reason text", map[string]string{"a": "z: tainted", "b": "a: no GPU"},
			[]ReasonGroup{{Reason: "a: no GPU", Clusters: []string{"b"}}, {Reason: "z: tainted", Clusters: []string{"a"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := GroupReasons(tt.reasons); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("GroupReasons = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// jsonEntry is an entry of WriteJSON's output as a tool reads it.
type jsonEntry struct {
	Workload     string                      `json:"workload"`
	Policy       *string                     `json:"policy"`
	Status       string                      `json:"status"`
	Clusters     []string                    `json:"clusters"`
	Reasons      map[string][]string         `json:"reasons"`
	MoreClusters map[string]int              `json:"moreClusters"`
	Message      string                      `json:"message"`
	Pods         map[string]map[string]int64 `json:"pods"`
}

func TestWriteJSONGroupsReasons(t *testing.T) {
	tests := []struct {
		name   string
		result Result
		want   jsonEntry
	}{
		{"placed, no reasons",
			aResult("PyTorchJob/ml/a", "Placed").policy("all").placedOn("c1").pods("c1/n-0", "worker", 2).build(),
			jsonEntry{Workload: "PyTorchJob/ml/a", Policy: ptr("all"), Status: "Placed", Clusters: []string{"c1"},
				Reasons: map[string][]string{}, Pods: map[string]map[string]int64{"c1/n-0": {"worker": 2}}}},
		{"a reason named once for its clusters",
			aResult("PyTorchJob/ml/b", "Unschedulable").policy("all").
				passedOver("needs nvidia.com/gpu 8 in total, 0 free", "c1", "c2").passedOver("tainted", "c3").build(),
			jsonEntry{Workload: "PyTorchJob/ml/b", Policy: ptr("all"), Status: "Unschedulable", Clusters: []string{},
				Reasons: map[string][]string{"needs nvidia.com/gpu 8 in total, 0 free": {"c1", "c2"}, "tainted": {"c3"}}}},
		{"past JSONClusters the rest are counted",
			aResult("PyTorchJob/ml/c", "Unschedulable").passedOver("no GPU", clusterNames(0, JSONClusters+3)...).
				passedOver("tainted", "z").build(),
			jsonEntry{Workload: "PyTorchJob/ml/c", Status: "Unschedulable", Clusters: []string{},
				Reasons:      map[string][]string{"no GPU": clusterNames(0, JSONClusters), "tainted": {"z"}},
				MoreClusters: map[string]int{"no GPU": 3}}},
		{"no policy", aResult(`Deployment/ml/"quoted"`, "NoPolicy").build(),
			jsonEntry{Workload: `Deployment/ml/"quoted"`, Status: "NoPolicy", Clusters: []string{}, Reasons: map[string][]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, []Result{tt.result}); err != nil {
				t.Fatal(err)
			}
			var got []jsonEntry
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("%v:\n%s", err, buf.String())
			}
			if len(got) != 1 || !reflect.DeepEqual(got[0], tt.want) {
				t.Errorf("decoded %+v, want %+v\n%s", got, tt.want, buf.String())
			}
		})
	}
}

// TestWriteJSONShape pins the layout people read: a line per field, per reason and per node.
func TestWriteJSONShape(t *testing.T) {
	results := []Result{
		aResult("PyTorchJob/ml/a", "Placed").policy("all").placedOn("c1").passedOver("tainted", "c2", "c3").
			pods("c1/n-0", "master", 1).pods("c1/n-0", "worker", 1).pods("c1/n-1", "worker", 2).build(),
		aResult("PyTorchJob/ml/b", "NoPolicy").build(),
	}
	want := `[
  {
    "workload": "PyTorchJob/ml/a",
    "policy": "all",
    "status": "Placed",
    "clusters": ["c1"],
    "reasons": {
      "tainted": ["c2", "c3"]
    },
    "pods": {
      "c1/n-0": {"master": 1, "worker": 1},
      "c1/n-1": {"worker": 2}
    }
  },
  {
    "workload": "PyTorchJob/ml/b",
    "policy": null,
    "status": "NoPolicy",
    "clusters": [],
    "reasons": {}
  }
]
`
	var buf bytes.Buffer
	if err := WriteJSON(&buf, results); err != nil {
		t.Fatal(err)
	}
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	if err := WriteJSON(&buf, nil); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "[]\n" {
		t.Errorf("no results: got %q, want []", buf.String())
	}
}

func TestWriteTableGroupsReasons(t *testing.T) {
	tests := []struct {
		name   string
		result Result
		want   []string
		absent []string
	}{
		{"one line per reason",
			aResult("PyTorchJob/ml/b", "Unschedulable").policy("all").passedOver("needs nvidia.com/gpu 8 in total, 0 free", "c1", "c2").
				passedOver("tainted", "c3").build(),
			[]string{"PyTorchJob/ml/b (Unschedulable):\n  c1, c2: needs nvidia.com/gpu 8 in total, 0 free\n  c3: tainted\n"}, nil},
		{"past tableClusters the rest are counted",
			aResult("PyTorchJob/ml/c", "Unschedulable").passedOver("no GPU", clusterNames(0, tableClusters+2)...).build(),
			[]string{strings.Join(clusterNames(0, tableClusters), ", ") + " and 2 more: no GPU\n"},
			[]string{fmt.Sprintf("c%02d", tableClusters)}},
		{"no reasons, no section", aResult("PyTorchJob/ml/a", "Placed").placedOn("c1").build(),
			[]string{"PyTorchJob/ml/a  -       Placed  c1\n"}, []string{"(Placed):"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, []Result{tt.result}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, buf.String())
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(buf.String(), a) {
					t.Errorf("table has %q:\n%s", a, buf.String())
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }
