package lifecycle

import (
	"fmt"
	"testing"

	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestVerdictKey: a verdict is published again only when it says something new. Free amounts in capacity
// reasons change as capacity trickles in and must not count; a reason of another kind, another placement
// or another analysis must.
func TestVerdictKey(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "u"}
	base := func() *schemas.PlacementVerdict {
		return &schemas.PlacementVerdict{Workload: ref, Sequence: 10, Status: schemas.VerdictUnschedulable, Policy: "all",
			Reasons:     map[string]string{"east": "needs cpu 4 in total, 3 free", "west": "is not Ready"},
			ReasonCodes: map[string]string{"east": "Capacity", "west": "NotReady"}, ViewSequence: 100}
	}
	key := verdictKey(base(), "analysis-1")
	cases := []struct {
		name     string
		change   func(v *schemas.PlacementVerdict)
		analysis string
		same     bool
	}{
		{"later sequence and view", func(v *schemas.PlacementVerdict) { v.Sequence, v.ViewSequence = 11, 200 }, "analysis-1", true},
		{"other free amounts", func(v *schemas.PlacementVerdict) { v.Reasons["east"] = "needs cpu 4 in total, 2 free" }, "analysis-1", true},
		{"another reason code", func(v *schemas.PlacementVerdict) { v.ReasonCodes["west"] = "Taint" }, "analysis-1", false},
		{"codes swapped between clusters", func(v *schemas.PlacementVerdict) {
			v.ReasonCodes["east"], v.ReasonCodes["west"] = v.ReasonCodes["west"], v.ReasonCodes["east"]
		}, "analysis-1", false},
		{"a cluster rejected no more", func(v *schemas.PlacementVerdict) { delete(v.ReasonCodes, "west") }, "analysis-1", false},
		{"placed", func(v *schemas.PlacementVerdict) {
			v.Status, v.Clusters, v.Reasons, v.ReasonCodes = schemas.VerdictPlaced, []string{"east"}, nil, nil
		}, "analysis-1", false},
		{"another policy", func(v *schemas.PlacementVerdict) { v.Policy = "gpu" }, "analysis-1", false},
		{"divided differently", func(v *schemas.PlacementVerdict) { v.Replicas = map[string]int32{"east": 2} }, "analysis-1", false},
		{"another analysis", func(*schemas.PlacementVerdict) {}, "analysis-2", false},
		// Field boundaries are kept: moving text from one field to the next is another verdict.
		{"shifted fields", func(v *schemas.PlacementVerdict) { v.Policy, v.Message = "al", "l" }, "analysis-1", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := base()
			tc.change(v)
			if got := verdictKey(v, tc.analysis) == key; got != tc.same {
				t.Errorf("same key = %v, want %v", got, tc.same)
			}
		})
	}
}

// BenchmarkPlacedVerdict: what the placer does per placed workload to say its verdict late in a bench run,
// with 47 clusters rejected for capacity: build it from the decision, key it, and encode it.
func BenchmarkPlacedVerdict(b *testing.B) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team", Name: "train", UID: "u"}
	d := &structs.Decision{Status: structs.StatusPlaced, Policy: "fill", Clusters: []string{"cluster-094"},
		Reasons: map[string]string{}, RejectCodes: map[string]structs.RejectCode{}}
	for i := range 47 {
		c := fmt.Sprintf("cluster-%03d", 2*i)
		d.Reasons[c] = fmt.Sprintf("needs nvidia.com/gpu 16 in total, %d free", i%7)
		d.RejectCodes[c] = structs.RejectCapacity
	}
	analysis := &schemas.Analysis{ResourceInterface: "pytorchjob", TotalPods: 2}
	analysisKey := analysisKey(analysis)
	b.ReportAllocs()
	for b.Loop() {
		v := verdictOf(ref, 7, d)
		v.Analysis = analysis
		_ = verdictKey(v, analysisKey)
		if _, err := schemas.EncodeData(schemas.TypePlacementVerdict, v); err != nil {
			b.Fatal(err)
		}
	}
}
