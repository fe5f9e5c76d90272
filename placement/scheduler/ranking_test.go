package scheduler_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
		// disfavoured are clusters tainted PreferNoSchedule, which the policy does not tolerate.
		disfavoured []string
		want        string
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
		{name: "capacity ignored, the first by name disfavoured", spec: v1alpha1.SchedulePolicySpec{CapacityAware: &f},
			clusters: []string{"a", "b"}, disfavoured: []string{"a"},
			want: "1 other cluster passed every check but ranks below b: capacityAware is false, so the earlier tier, then the name, decides; " +
				"1 of them with a PreferNoSchedule taint the policy does not tolerate, which ranks a cluster last"},
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
				opts := []placementtest.ClusterOpt{placementtest.Labels(map[string]string{"size": size})}
				if slices.Contains(tt.disfavoured, name) {
					opts = append(opts, placementtest.Taints(corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule}))
				}
				h.AddCluster(name, opts...)
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

// TestSpreadAndGroupVerdictsSayWhyOtherClustersWereNotUsed: a Divide share and a groupBy group are placed by the
// same ranking as a single workload, so their verdicts say likewise why the clusters that fitted but ranked
// below were not used. eu-a (8 CPUs) and eu-b (16) both fit eu's share of 2 replicas, us-a alone is in us;
// BinPack takes eu-a for eu and us-a for us. The group of two 2-CPU jobs fits every cluster and goes to eu-a.
func TestSpreadAndGroupVerdictsSayWhyOtherClustersWereNotUsed(t *testing.T) {
	divide := func() v1alpha1.SchedulePolicySpec {
		return v1alpha1.SchedulePolicySpec{
			ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
			SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
				PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 50}, {TopologyValue: "us", Percentage: 50}}}}
	}
	deployment := func(replicas int64) []*placementtest.AnalysisBuilder {
		return []*placementtest.AnalysisBuilder{placementtest.Deployment("web", "frontend").Component("pod", replicas, res("cpu", "1")).Scalable()}
	}
	tests := []struct {
		name      string
		spec      v1alpha1.SchedulePolicySpec
		workloads []*placementtest.AnalysisBuilder
		labels    map[string]string
		want      string
	}{
		{name: "Divide", spec: divide(), workloads: deployment(4),
			want: "region=eu: 1 other cluster passed every check but ranks below eu-a: BinPack prefers the least cpu left free"},
		{name: "Divide of 0 replicas", spec: divide(), workloads: deployment(0),
			want: "0 replicas go to one cluster, of the first topologyValue with one that fits; " +
				"region=eu: 1 other cluster passed every check but ranks below eu-a: BinPack prefers the least pods left free"},
		{name: "groupBy", spec: v1alpha1.SchedulePolicySpec{GroupBy: &v1alpha1.GroupBy{LabelKey: "team"}},
			workloads: []*placementtest.AnalysisBuilder{
				placementtest.PyTorchJob("ml", "a").Component("worker", 1, res("cpu", "2")),
				placementtest.PyTorchJob("ml", "b").Component("worker", 1, res("cpu", "2"))},
			labels: map[string]string{"team": "ml"},
			want:   "2 other clusters passed every check but rank below eu-a: BinPack prefers the least cpu left free"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			for name, cpus := range map[string]string{"eu-a": "8", "eu-b": "16", "us-a": "16"} {
				h.AddCluster(name, placementtest.Labels(map[string]string{"region": name[:2]}))
				h.AddNodes(name, cpuNodes("n", 1, cpus))
			}
			h.AddPolicy(anyPolicy(tt.spec))
			var ids []string
			for _, w := range tt.workloads {
				ids = append(ids, h.AddWorkload(w.Obj(), tt.labels))
			}
			if d := h.Place(ids[0]); d.Message != tt.want {
				t.Errorf("placed on %v with message %q, want %q", d.Clusters, d.Message, tt.want)
			}
		})
	}
}
