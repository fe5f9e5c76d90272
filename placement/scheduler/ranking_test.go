package scheduler_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
)

// TestPlacedVerdictSaysWhyOtherClustersWereNotUsed: clusters that passed every check but ranked below the
// chosen one get no reason of their own, so the decision's message says how many there were and what ranked
// them. Clusters a (8 CPUs), b (16) and c (32) all fit a 2-CPU job; BinPack takes a, Spread takes c.
func TestPlacedVerdictSaysWhyOtherClustersWereNotUsed(t *testing.T) {
	f := false
	tests := []struct {
		name     string
		spec     v1alpha1.SchedulePolicySpec
		clusters []string
		want     string
	}{
		{name: "BinPack", clusters: []string{"a", "b", "c"},
			want: "2 other clusters passed every check but rank below a: BinPack prefers the least cpu left free"},
		{name: "Spread", spec: v1alpha1.SchedulePolicySpec{Scoring: v1alpha1.ScoringSpread}, clusters: []string{"a", "b", "c"},
			want: "2 other clusters passed every check but rank below c: Spread prefers the most cpu left free"},
		{name: "tiers", clusters: []string{"a", "b", "c"}, spec: v1alpha1.SchedulePolicySpec{OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{
			Tiers: []metav1.LabelSelector{{MatchLabels: map[string]string{"size": "large"}}, {}}}},
			want: "2 other clusters passed every check but rank below c: earlier tiers come first, then BinPack prefers the least cpu left free"},
		{name: "capacity ignored", spec: v1alpha1.SchedulePolicySpec{CapacityAware: &f}, clusters: []string{"a", "b"},
			want: "1 other cluster passed every check but ranks below a: capacityAware is false, so the earlier tier, then the name, decides"},
		{name: "one cluster", clusters: []string{"b"}},
	}
	cpus := map[string]string{"a": "8", "b": "16", "c": "32"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			for _, name := range tt.clusters {
				size := "small"
				if name == "c" {
					size = "large"
				}
				h.AddCluster(name, placementtest.Labels(map[string]string{"size": size}))
				h.AddNodes(name, cpuNodes("n", 1, cpus[name]))
			}
			h.AddPolicy(anyPolicy(tt.spec))
			id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "2")).Obj(), nil)
			if d := h.Place(id); d.Message != tt.want {
				t.Errorf("placed on %v with message %q, want %q", d.Clusters, d.Message, tt.want)
			}
		})
	}
}
