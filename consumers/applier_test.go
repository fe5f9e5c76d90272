package consumers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/schemas"
)

// TestStaleDecisionsAreJudgedWithinOneEpoch: a decision older than the one an object records is stale only
// when both come from the same streams; after the streams were recreated, sequences start over.
func TestStaleDecisionsAreJudgedWithinOneEpoch(t *testing.T) {
	cases := []struct {
		name     string
		recorded string
		decision schemas.PlacementDecided
		stale    bool
	}{
		{"older in the same epoch", "e1/10", schemas.PlacementDecided{Epoch: "e1", Sequence: 9}, true},
		{"same sequence is not stale (redelivery)", "e1/10", schemas.PlacementDecided{Epoch: "e1", Sequence: 10}, false},
		{"newer in the same epoch", "e1/10", schemas.PlacementDecided{Epoch: "e1", Sequence: 11}, false},
		{"older sequence of a new epoch", "e1/10", schemas.PlacementDecided{Epoch: "e2", Sequence: 3}, false},
		{"no epoch on either side", "10", schemas.PlacementDecided{Sequence: 9}, true},
		{"nothing recorded", "", schemas.PlacementDecided{Epoch: "e1", Sequence: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.recorded != "" {
				obj.SetAnnotations(map[string]string{AnnotationDecisionSequence: tc.recorded})
			}
			if got := stale(obj, &tc.decision); got != tc.stale {
				t.Errorf("stale = %t, want %t", got, tc.stale)
			}
			// What the applier writes for a decision is judged not stale for that same decision.
			obj.SetAnnotations(map[string]string{AnnotationDecisionSequence: sequenceAnnotation(&tc.decision)})
			if stale(obj, &tc.decision) {
				t.Errorf("a decision is stale against its own annotation %q", sequenceAnnotation(&tc.decision))
			}
		})
	}
}
