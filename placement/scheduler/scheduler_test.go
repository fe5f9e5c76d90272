package scheduler_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/structs"
)

var res = placementtest.Res

func gpuNodes(prefix string, count int, gpus, usedGPUs string) placementtest.NodeSpec {
	return placementtest.NodeSpec{Prefix: prefix, Count: count,
		Allocatable: res("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", gpus),
		Requested:   res("nvidia.com/gpu", usedGPUs)}
}

func anyPolicy(spec v1alpha1.SchedulePolicySpec) *v1alpha1.SchedulePolicy {
	return placementtest.Policy("default", spec)
}

// TestFragmentation is the case a cluster-level estimator gets wrong: gpu-a has 16 free GPUs spread as 2 per node,
// gpu-b has 8 on one node. An 8-GPU pod only fits gpu-b. With Spread scoring a summing estimator would prefer
// gpu-a (16 free > 8 free) and the pod would stay Pending there.
func TestFragmentation(t *testing.T) {
	for _, scoring := range []v1alpha1.ScoringStrategy{v1alpha1.ScoringSpread, v1alpha1.ScoringBinPack} {
		t.Run(string(scoring), func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("gpu-a")
			h.AddNodes("gpu-a", gpuNodes("gpu-a-node", 8, "8", "6"))
			h.AddCluster("gpu-b")
			h.AddNodes("gpu-b", gpuNodes("gpu-b-node", 1, "8", "0"))
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: scoring}))
			id := h.AddWorkload(placementtest.PyTorchJob("team-a", "train").
				Component("worker", 1, res("nvidia.com/gpu", "8")).Obj(), nil)

			d := h.Place(id)
			if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, []string{"gpu-b"}) {
				t.Fatalf("decision = %s on %v, want Placed on [gpu-b]; reasons %v", d.Status, d.Clusters, d.Reasons)
			}
			if len(d.Assignments) != 1 || d.Assignments[0].Node != "gpu-b-node" || d.Assignments[0].Pods != 1 {
				t.Errorf("assignments = %+v, want 1 pod on gpu-b-node", d.Assignments)
			}
			if scoring == v1alpha1.ScoringBinPack {
				return // gpu-b scores best and fits, so gpu-a is never tried and has no reason
			}
			// Every gpu-a node has 2 free; the first by name is the one the reason names.
			want := "pod worker (nvidia.com/gpu 8) fits no node: largest free 2 on gpu-a-node-0"
			if d.Reasons["gpu-a"] != want {
				t.Errorf("reason for gpu-a = %q, want %q", d.Reasons["gpu-a"], want)
			}
		})
	}
}

// TestBackToBackGangs submits 10 identical gang jobs of 2 workers × 3 GPUs to one cluster with three 8-GPU nodes
// and one 6-GPU node (30 GPUs). By hand: an 8-GPU node holds 2 workers (6 GPUs, 2 left over), the 6-GPU node
// holds 2, so 8 workers fit: exactly 4 jobs. A summing estimator would admit 30/6 = 5.
func TestBackToBackGangs(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	h.AddNodes("c1", gpuNodes("big", 3, "8", "0"))
	h.AddNodes("c1", gpuNodes("small", 1, "6", "0"))
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	placed := 0
	for i := range 10 {
		id := h.AddWorkload(placementtest.PyTorchJob("ml", "job-"+string(rune('a'+i))).
			Component("worker", 2, res("cpu", "8", "nvidia.com/gpu", "3")).Obj(), nil)
		d := h.Place(id)
		switch d.Status {
		case structs.StatusPlaced:
			placed++
		case structs.StatusUnschedulable:
			if !strings.Contains(d.Reasons["c1"], "fits no node") {
				t.Errorf("job %d: reason %q, want a node-level reason", i, d.Reasons["c1"])
			}
		default:
			t.Fatalf("job %d: status %s", i, d.Status)
		}
		assertNoOvercommit(t, h)
	}
	if placed != 4 {
		t.Errorf("placed %d jobs, want 4", placed)
	}
}

// assertNoOvercommit checks every node: requested by running pods plus reserved never exceeds allocatable.
func assertNoOvercommit(t interface {
	Helper()
	Fatalf(string, ...any)
}, h *placementtest.Harness) {
	t.Helper()
	snap := h.Store.Snapshot()
	rt := snap.Resources()
	for _, c := range snap.Capacities() {
		for _, node := range snap.Nodes(c.Name) {
			used := node.Requested
			for _, r := range snap.ReservationsOn(c.Name, node.Name) {
				used = used.Add(r.On(c.Name, node.Name).Request)
			}
			for i, u := range used {
				if u > node.Allocatable.Get(i) {
					t.Fatalf("node %s/%s over-committed: %s %s used of %s", c.Name, node.Name, rt.Name(i),
						rt.Quantity(i, u), rt.Quantity(i, node.Allocatable.Get(i)))
				}
			}
		}
	}
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func cpuNodes(prefix string, count int, cpu string) placementtest.NodeSpec {
	return placementtest.NodeSpec{Prefix: prefix, Count: count, Allocatable: res("cpu", cpu, "memory", "64Gi")}
}

type placeWant struct {
	status   structs.DecisionStatus
	clusters []string
	replicas map[string]int64
	// reasons maps a cluster to a substring its reason must contain.
	reasons map[string]string
	policy  string
	// message is a substring the decision's message must contain.
	message string
}

// TestPolicyFeatures runs the whole cycle for each policy feature on a fleet built by fixtures. Each case's
// expectation is worked out by hand from the feature's semantics, as the comments say.
func TestPolicyFeatures(t *testing.T) {
	small := func(name string) *placementtest.AnalysisBuilder {
		return placementtest.PyTorchJob("team-a", name).Component("worker", 1, res("cpu", "2"))
	}
	// groupByTeamOnLargeAndSmall groups workloads by their team label over c-large (16 CPUs on two nodes) and
	// c-small (8 on one).
	groupByTeamOnLargeAndSmall := func(h *placementtest.Harness) {
		h.AddCluster("c-large")
		h.AddNodes("c-large", cpuNodes("n", 2, "8"))
		h.AddCluster("c-small")
		h.AddNodes("c-small", cpuNodes("n", 1, "8"))
		h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{GroupBy: &v1alpha1.GroupBy{LabelKey: "team"}}))
	}
	cases := []struct {
		name  string
		setup func(h *placementtest.Harness)
		// workloads are placed in order; want holds the expectation for the last one.
		workloads []*placementtest.AnalysisBuilder
		labels    map[string]string
		want      placeWant
	}{
		{
			name:      "no matching policy leaves the workload unplaced",
			setup:     func(h *placementtest.Harness) { h.AddCluster("c1"); h.AddNodes("c1", cpuNodes("n", 1, "8")) },
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			want:      placeWant{status: structs.StatusNoPolicy},
		},
		{
			name: "the highest priority policy wins, ties go to the smaller name",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("east", placementtest.Labels(map[string]string{"region": "east"}))
				h.AddNodes("east", cpuNodes("n", 1, "8"))
				h.AddCluster("west", placementtest.Labels(map[string]string{"region": "west"}))
				h.AddNodes("west", cpuNodes("n", 1, "8"))
				h.AddPolicy(placementtest.Policy("b-west", v1alpha1.SchedulePolicySpec{Priority: 10, ClusterSelector: sel("region", "west")}))
				h.AddPolicy(placementtest.Policy("a-east", v1alpha1.SchedulePolicySpec{Priority: 10, ClusterSelector: sel("region", "east")}))
				h.AddPolicy(placementtest.Policy("low", v1alpha1.SchedulePolicySpec{Priority: 1}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"east"}, policy: "a-east",
				reasons: map[string]string{"west": "clusterSelector"}},
		},
		{
			name: "namespaceSelector and resourceSelectors pick the policy",
			setup: func(h *placementtest.Harness) {
				h.AddNamespace("team-a", map[string]string{"tier": "gold"})
				h.AddCluster("gold", placementtest.Labels(map[string]string{"tier": "gold"}))
				h.AddNodes("gold", cpuNodes("n", 1, "8"))
				h.AddCluster("any")
				h.AddNodes("any", cpuNodes("n", 1, "8"))
				h.AddPolicy(placementtest.Policy("gold-torch", v1alpha1.SchedulePolicySpec{Priority: 5,
					NamespaceSelector: sel("tier", "gold"),
					ResourceSelectors: v1alpha1.ResourceSelectors{
						Kinds:          []v1alpha1.GroupKind{{Group: "kubeflow.org", Kind: "PyTorchJob"}},
						LabelSelectors: []metav1.LabelSelector{*sel("team", "vision")}},
					ClusterSelector: sel("tier", "gold")}))
				h.AddPolicy(placementtest.Policy("fallback", v1alpha1.SchedulePolicySpec{ClusterSelector: sel("missing", "x")}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			labels:    map[string]string{"team": "vision"},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"gold"}, policy: "gold-torch"},
		},
		{
			name: "a workload whose labels miss the labelSelector falls to the next policy",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("c1")
				h.AddNodes("c1", cpuNodes("n", 1, "8"))
				h.AddPolicy(placementtest.Policy("vision", v1alpha1.SchedulePolicySpec{Priority: 5,
					ResourceSelectors: v1alpha1.ResourceSelectors{LabelSelectors: []metav1.LabelSelector{*sel("team", "vision")}}}))
				h.AddPolicy(placementtest.Policy("fallback", v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			labels:    map[string]string{"team": "nlp"},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"c1"}, policy: "fallback"},
		},
		{
			name: "not Ready, tainted and API-less clusters are filtered with reasons",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("down", placementtest.NotReady())
				h.AddNodes("down", cpuNodes("n", 1, "8"))
				h.AddCluster("maint", placementtest.Taints(corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}))
				h.AddNodes("maint", cpuNodes("n", 1, "8"))
				h.AddCluster("noapi", placementtest.APIs("apps/v1/Deployment"))
				h.AddNodes("noapi", cpuNodes("n", 1, "8"))
				h.AddCluster("ok", placementtest.APIs("kubeflow.org/v1/PyTorchJob"))
				h.AddNodes("ok", cpuNodes("n", 1, "8"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: v1alpha1.ScoringSpread}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"ok"}, reasons: map[string]string{
				"down": "is not Ready", "maint": "taint maintenance:NoSchedule", "noapi": "does not serve kubeflow.org/v1/PyTorchJob"}},
		},
		{
			name: "policy tolerations admit a tainted cluster",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("maint", placementtest.Taints(corev1.Taint{Key: "maintenance", Value: "yes", Effect: corev1.TaintEffectNoSchedule}))
				h.AddNodes("maint", cpuNodes("n", 1, "8"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Tolerations: []corev1.Toleration{
					{Key: "maintenance", Operator: corev1.TolerationOpEqual, Value: "yes"}}}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"maint"}},
		},
		{
			// Tier onprem holds 4 CPUs: job a (4 CPUs) fills it, so job b spills to the cloud tier.
			name: "fill-and-spill tries tiers in order",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("cloud", placementtest.Labels(map[string]string{"provider": "cloud"}))
				h.AddNodes("cloud", cpuNodes("n", 1, "64"))
				h.AddCluster("onprem", placementtest.Labels(map[string]string{"provider": "onprem"}))
				h.AddNodes("onprem", cpuNodes("n", 1, "4"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: v1alpha1.ScoringSpread,
					OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
						*sel("provider", "onprem"), *sel("provider", "cloud")}}}))
			},
			workloads: []*placementtest.AnalysisBuilder{
				placementtest.PyTorchJob("team-a", "a").Component("worker", 1, res("cpu", "4")),
				placementtest.PyTorchJob("team-a", "b").Component("worker", 1, res("cpu", "4")),
			},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"cloud"},
				reasons: map[string]string{"onprem": "needs cpu 4 in total, 0 free"}},
		},
		{
			// big has 32 free CPUs, small 8; a 4-CPU job leaves 28 and 4. BinPack picks the smaller leftover.
			name: "BinPack prefers the cluster left with the least free dominant resource",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("big")
				h.AddNodes("big", cpuNodes("n", 1, "32"))
				h.AddCluster("small")
				h.AddNodes("small", cpuNodes("n", 1, "8"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").Component("worker", 1, res("cpu", "4"))},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"small"}},
		},
		{
			name: "Spread prefers the cluster left with the most free dominant resource",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("big")
				h.AddNodes("big", cpuNodes("n", 1, "32"))
				h.AddCluster("small")
				h.AddNodes("small", cpuNodes("n", 1, "8"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: v1alpha1.ScoringSpread}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").Component("worker", 1, res("cpu", "4"))},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"big"}},
		},
		{
			// The dominant resource is the GPU (1 of 9 GPUs vs 1 of 160 CPUs): gpu-few is left with 0 GPUs, gpu-many
			// with 7, so BinPack picks gpu-few although it has more free CPU.
			name: "BinPack scores by the dominant resource, not by CPU",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("gpu-few")
				h.AddNodes("gpu-few", placementtest.NodeSpec{Prefix: "n", Allocatable: res("cpu", "128", "nvidia.com/gpu", "1")})
				h.AddCluster("gpu-many")
				h.AddNodes("gpu-many", placementtest.NodeSpec{Prefix: "n", Allocatable: res("cpu", "32", "nvidia.com/gpu", "8")})
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").Component("worker", 1, res("cpu", "1", "nvidia.com/gpu", "1"))},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"gpu-few"}},
		},
		{
			// Neither cluster has room, yet capacityAware=false places by order: first tier, then name.
			name: "capacityAware=false ignores capacity",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("b")
				h.AddNodes("b", cpuNodes("n", 1, "1"))
				h.AddCluster("a")
				h.AddNodes("a", cpuNodes("n", 1, "1"))
				f := false
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{CapacityAware: &f}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").Component("worker", 3, res("cpu", "16"))},
			want:      placeWant{status: structs.StatusPlaced, clusters: []string{"a"}},
		},
		{
			// The tiers of a Duplicate only select: both tiers' clusters get a copy, the cluster in none does not.
			name: "Duplicate copies to every tier of an orderedClusterSelector",
			setup: func(h *placementtest.Harness) {
				for c, tier := range map[string]string{"first": "1", "second": "2", "none": "3"} {
					h.AddCluster(c, placementtest.Labels(map[string]string{"tier": tier}))
					h.AddNodes(c, cpuNodes("n", 1, "8"))
				}
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{
					OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{*sel("tier", "1"), *sel("tier", "2")}},
					SpreadConstraints:      &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("operator")},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"first", "second"},
				reasons: map[string]string{"none": "is in no tier of the policy's orderedClusterSelector"}},
		},
		{
			name: "Duplicate places a copy on every Ready selected cluster that fits",
			setup: func(h *placementtest.Harness) {
				for _, c := range []string{"c1", "c2"} {
					h.AddCluster(c)
					h.AddNodes(c, cpuNodes("n", 1, "8"))
				}
				h.AddCluster("c3", placementtest.NotReady())
				h.AddNodes("c3", cpuNodes("n", 1, "8"))
				h.AddCluster("tiny")
				h.AddNodes("tiny", cpuNodes("n", 1, "1"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("operator")},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"c1", "c2"},
				reasons: map[string]string{"c3": "not Ready", "tiny": "needs cpu 2 in total, 1 free"}},
		},
		{
			// 10 replicas at 33/33/34: floors 3, 3, 3 (sum 9); the one left goes to the largest remainder, 0.4 of
			// the 34% share, so us-west gets 4.
			name: "Divide splits replicas by percentage with an exact sum",
			setup: func(h *placementtest.Harness) {
				for _, r := range []string{"eu", "us-east", "us-west"} {
					h.AddCluster(r+"-1", placementtest.Labels(map[string]string{"region": r}))
					h.AddNodes(r+"-1", cpuNodes("n", 2, "8"))
				}
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{
					ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
					SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
						PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 33},
							{TopologyValue: "us-east", Percentage: 33}, {TopologyValue: "us-west", Percentage: 34}}}}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.Deployment("web", "frontend").Component("pod", 10, res("cpu", "1")).Scalable()},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"eu-1", "us-east-1", "us-west-1"},
				replicas: map[string]int64{"eu-1": 3, "us-east-1": 3, "us-west-1": 4}},
		},
		{
			// A cluster labelled with another region and one without the label are both out of the Divide, each
			// for its own reason: a cluster without the topology key has no value to compare.
			name: "Divide says which clusters lack the topologyKey and which carry an unlisted value",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("eu-1", placementtest.Labels(map[string]string{"region": "eu"}))
				h.AddCluster("ap-1", placementtest.Labels(map[string]string{"region": "ap"}))
				h.AddCluster("bare")
				for _, c := range []string{"eu-1", "ap-1", "bare"} {
					h.AddNodes(c, cpuNodes("n", 1, "8"))
				}
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{
					ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
					SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
						PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 100}}}}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.Deployment("web", "frontend").Component("pod", 2, res("cpu", "1")).Scalable()},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"eu-1"}, reasons: map[string]string{
				"ap-1": `its region label "ap" is not a topologyValue of the policy's percentageSplit`,
				"bare": "has no region label, the topologyKey the policy's percentageSplit divides over"}},
		},
		{
			// ml-a and ml-b share team=ml and need 6 CPUs each: 12 together. c-small (8) could take either alone but
			// not both, so the first member's cycle picks c-large for the group; the second follows it.
			name:  "groupBy places a label group together, chosen for the combined demand",
			setup: groupByTeamOnLargeAndSmall,
			workloads: []*placementtest.AnalysisBuilder{
				placementtest.PyTorchJob("team-a", "ml-a").Component("worker", 1, res("cpu", "6")),
				placementtest.PyTorchJob("team-a", "ml-b").Component("worker", 1, res("cpu", "6")),
			},
			labels: map[string]string{"team": "ml"},
			want:   placeWant{status: structs.StatusPlaced, clusters: []string{"c-large"}},
		},
		{
			// Both clusters take the group's one member; BinPack picks c-small (6 CPUs left, not 14), and the
			// verdict says why c-large was passed over, as it does for a workload placed alone.
			name:      "groupBy says why the clusters it passed over rank lower",
			setup:     groupByTeamOnLargeAndSmall,
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "ml-a").Component("worker", 1, res("cpu", "2"))},
			labels:    map[string]string{"team": "ml"},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"c-small"},
				message: "1 other cluster passed every check but ranks below c-small: BinPack prefers the least cpu left free"},
		},
		{
			// 4 replicas at 50/50: 2 per region. us has only a 1-CPU cluster, so the us share fits nowhere and the
			// whole workload stays unplaced (no partial Divide).
			name: "Divide is all or nothing when a share fits no cluster of its topology value",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("eu-1", placementtest.Labels(map[string]string{"region": "eu"}))
				h.AddNodes("eu-1", cpuNodes("n", 1, "8"))
				h.AddCluster("us-1", placementtest.Labels(map[string]string{"region": "us"}))
				h.AddNodes("us-1", cpuNodes("n", 1, "1"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{
					ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{{Group: "apps", Kind: "Deployment"}}},
					SpreadConstraints: &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDivide, TopologyKey: "region",
						PercentageSplit: []v1alpha1.PercentageSplit{{TopologyValue: "eu", Percentage: 50}, {TopologyValue: "us", Percentage: 50}}}}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.Deployment("web", "frontend").Component("pod", 4, res("cpu", "1")).Scalable()},
			want:      placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{"us-1": "needs cpu 2 in total, 1 free"}},
		},
		{
			// g-a (6 CPUs) goes to small (BinPack: 2 left vs 10) before g-b is known; g-b (6 CPUs) must follow it
			// there, where only 2 are left, so it is unschedulable although big has room.
			name: "groupBy keeps a group on its cluster even when a later member no longer fits there",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("big")
				h.AddNodes("big", cpuNodes("n", 1, "16"))
				h.AddCluster("small")
				h.AddNodes("small", cpuNodes("n", 1, "8"))
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{GroupBy: &v1alpha1.GroupBy{LabelKey: "team"}}))
				h.Place(h.AddWorkload(placementtest.PyTorchJob("team-a", "g-a").Component("worker", 1, res("cpu", "6")).Obj(),
					map[string]string{"team": "ml"}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "g-b").Component("worker", 1, res("cpu", "6"))},
			labels:    map[string]string{"team": "ml"},
			want: placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{
				"big": "group team=ml is placed on small", "small": "needs cpu 6 in total, 2 free"}},
		},
		{
			// Pods honour node selectors, required affinity and node taints: only gpu-1 carries H100, isn't tainted
			// against the pod, and matches the NotIn on zone.
			name: "node selector, affinity and node taints steer pods",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("c1")
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "gpu-0", Labels: map[string]string{"product": "H100", "zone": "z1"},
					Allocatable: res("cpu", "8", "nvidia.com/gpu", "8")})
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "gpu-1", Labels: map[string]string{"product": "H100", "zone": "z2"},
					Taints:      []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
					Allocatable: res("cpu", "8", "nvidia.com/gpu", "8")})
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "gpu-2", Labels: map[string]string{"product": "A100", "zone": "z2"},
					Allocatable: res("cpu", "8", "nvidia.com/gpu", "8")})
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").
				Component("worker", 1, res("nvidia.com/gpu", "4")).
				NodeSelector(map[string]string{"product": "H100"}).
				Affinity(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"z1"}}}}}}).
				Tolerate(corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists})},
			want: placeWant{status: structs.StatusPlaced, clusters: []string{"c1"}},
		},
		{
			// Two nodes, one lacking the label and one tainted: the reason counts both kinds of refusal.
			name: "a pod no node allows gets a node-level reason",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("c1")
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "plain", Allocatable: res("cpu", "8")})
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "tainted", Labels: map[string]string{"product": "H100"},
					Taints: []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoExecute}}, Allocatable: res("cpu", "8")})
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").
				Component("worker", 1, res("cpu", "1")).NodeSelector(map[string]string{"product": "H100"})},
			want: placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{
				"c1": "pod worker fits no node: 1 node not matching its nodeSelector, 1 node with untolerated taint dedicated=infer:NoExecute"}},
		},
		{
			// The GPU nodes are tainted and the job forgot the toleration: the CPU node it may use has no GPU,
			// and the reason names the taint that kept it off the others, as kube-scheduler's message does.
			name: "a pod too big for the nodes it may use names the nodes it may not",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("c1")
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "cpu", Allocatable: res("cpu", "8")})
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "gpu", Count: 2,
					Taints:      []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
					Allocatable: res("cpu", "8", "nvidia.com/gpu", "8")})
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").Component("worker", 1, res("nvidia.com/gpu", "8"))},
			want: placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{
				"c1": "pod worker (nvidia.com/gpu 8) fits no node: largest free 0 on cpu; 2 nodes with untolerated taint nvidia.com/gpu:NoSchedule"}},
		},
		{
			// Each node has 4 CPUs and 8Gi: a pod of 3 CPUs and 6Gi fits once per node, the third pod nowhere,
			// although the cluster's total (8 CPUs, 16Gi) covers the 9 CPUs and 18Gi... it does not, so the total
			// check fires first with cpu.
			name: "gang larger than the cluster is pruned by the bound check",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("c1")
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "n", Count: 2, Allocatable: res("cpu", "4", "memory", "8Gi")})
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").Component("worker", 3, res("cpu", "3", "memory", "6Gi"))},
			want:      placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{"c1": "needs cpu 9 in total, 8 free"}},
		},
		{
			// drained's nodes are all cordoned: its sums hold nothing, and its reason says why rather than
			// reading as a full cluster. bare has no node at all.
			name: "a cluster drained for maintenance or without nodes says so",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("drained")
				h.AddNodes("drained", placementtest.NodeSpec{Prefix: "n", Count: 2, Unschedulable: true, Allocatable: res("cpu", "8")})
				h.AddCluster("bare")
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{small("a")},
			want: placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{
				"drained": "needs cpu 2 in total, 0 free, and pods 1 in total, 0 free (2 nodes cordoned)", "bare": "has no nodes"}},
		},
		{
			// Three nodes of 4 CPUs (12 total) pass the bound check for 3 pods of 3 CPUs plus a launcher of 2 (11),
			// but the 3-CPU pods take one node each, leaving 1 CPU per node: the launcher fits nowhere.
			name: "gang that passes the bound check but not packing",
			setup: func(h *placementtest.Harness) {
				h.AddCluster("c1")
				h.AddNodes("c1", placementtest.NodeSpec{Prefix: "n", Count: 3, Allocatable: res("cpu", "4")})
				h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			},
			workloads: []*placementtest.AnalysisBuilder{placementtest.PyTorchJob("team-a", "a").
				Component("launcher", 1, res("cpu", "2")).Component("worker", 3, res("cpu", "3"))},
			want: placeWant{status: structs.StatusUnschedulable, reasons: map[string]string{
				"c1": "pod launcher (cpu 2) fits no node: largest free 1 on n-0"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			tc.setup(h)
			// Like simulate, every workload is known before the first is placed (groupBy needs that).
			var ids []string
			for _, w := range tc.workloads {
				ids = append(ids, h.AddWorkload(w.Obj(), tc.labels))
			}
			var d *structs.Decision
			for _, id := range ids {
				d = h.Place(id)
			}
			checkDecision(t, d, tc.want)
			assertNoOvercommit(t, h)
		})
	}
}

func checkDecision(t *testing.T, d *structs.Decision, want placeWant) {
	t.Helper()
	if d.Status != want.status {
		t.Fatalf("status = %s, want %s (reasons %v, message %q)", d.Status, want.status, d.Reasons, d.Message)
	}
	if want.clusters != nil && !slices.Equal(d.Clusters, want.clusters) {
		t.Errorf("clusters = %v, want %v (reasons %v)", d.Clusters, want.clusters, d.Reasons)
	}
	if want.replicas != nil {
		for c, n := range want.replicas {
			if d.Replicas[c] != n {
				t.Errorf("replicas = %v, want %v", d.Replicas, want.replicas)
				break
			}
		}
	}
	if !strings.Contains(d.Message, want.message) {
		t.Errorf("message = %q, want it to contain %q", d.Message, want.message)
	}
	if want.policy != "" && d.Policy != want.policy {
		t.Errorf("policy = %q, want %q", d.Policy, want.policy)
	}
	for c, sub := range want.reasons {
		if !strings.Contains(d.Reasons[c], sub) {
			t.Errorf("reason for %s = %q, want it to contain %q", c, d.Reasons[c], sub)
		}
	}
	if d.ID == "" || d.SnapshotIndex == 0 {
		t.Errorf("decision lacks an ID or snapshot index: %+v", d)
	}
}

// TestAvoidedClustersAreFilteredWithTheirReason: a workload moving off a cluster (its pods pended or
// failed there) is rejected there with the reason the pipeline gave, and lands elsewhere.
func TestAvoidedClustersAreFilteredWithTheirReason(t *testing.T) {
	h := placementtest.NewHarness(t)
	for _, c := range []string{"a", "b"} {
		h.AddCluster(c)
		h.AddNodes(c, cpuNodes("n", 1, "8"))
	}
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	a := placementtest.PyTorchJob("team", "job").Component("worker", 1, placementtest.Res("cpu", "2")).Obj()
	if _, err := h.Store.UpsertWorkload(h.NextSeq(), structs.WorkloadInfo{Analysis: a,
		Avoid: map[string]string{"a": "pods pending for 5m0s"}}); err != nil {
		t.Fatal(err)
	}
	d := h.Place(structs.WorkloadID(a.APIVersion, a.Kind, a.Namespace, a.Name))
	if d.Status != structs.StatusPlaced || len(d.Clusters) != 1 || d.Clusters[0] != "b" {
		t.Fatalf("decision = %s on %v, want Placed on b", d.Status, d.Clusters)
	}
	if d.Reasons["a"] != "pods pending for 5m0s" || d.RejectCodes["a"] != structs.RejectAvoided {
		t.Errorf("cluster a rejected with %q (%s), want the avoid reason", d.Reasons["a"], d.RejectCodes["a"])
	}
}

// TestClusterVerdictsFollowClusterChanges runs three cycles on one Scheduler, which remembers per policy and kind
// what it decided for each cluster object, while clusters change between them: a cluster that starts serving the
// kind is admitted, one that stops being Ready is rejected for it, and a workload's clusters to avoid are checked
// after selector and readiness but before taints and APIs, as without the memo. Reasons are the filter's texts.
func TestClusterVerdictsFollowClusterChanges(t *testing.T) {
	h := placementtest.NewHarness(t)
	gpuTaint := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	h.AddCluster("a", placementtest.APIs("apps/v1/Deployment"))
	h.AddCluster("b", placementtest.Taints(gpuTaint))
	h.AddCluster("c")
	for _, c := range []string{"a", "b", "c"} {
		h.AddNodes(c, cpuNodes("n", 1, "8"))
	}
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	job := func(name string, avoid map[string]string) string {
		a := placementtest.PyTorchJob("team", name).Component("worker", 1, res("cpu", "1")).Obj()
		wl, err := h.Store.UpsertWorkload(h.NextSeq(), structs.WorkloadInfo{Analysis: a, Generation: 1, Avoid: avoid})
		if err != nil {
			t.Fatal(err)
		}
		return wl.ID
	}
	check := func(d *structs.Decision, placedOn string, reasons map[string]string) {
		t.Helper()
		if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, []string{placedOn}) {
			t.Fatalf("decision %s on %v, want Placed on %s; reasons %v", d.Status, d.Clusters, placedOn, d.Reasons)
		}
		if !maps.Equal(d.Reasons, reasons) {
			t.Errorf("reasons = %v, want %v", d.Reasons, reasons)
		}
	}
	const noAPI = "does not serve kubeflow.org/v1/PyTorchJob"
	const tainted = "has taint dedicated=gpu:NoSchedule that the policy does not tolerate"
	check(h.Place(job("first", nil)), "c", map[string]string{"a": noAPI, "b": tainted})

	h.AddCluster("a", placementtest.APIs("apps/v1/Deployment", "kubeflow.org/v1/PyTorchJob"))
	h.AddCluster("c", placementtest.NotReady())
	check(h.Place(job("second", nil)), "a", map[string]string{"b": tainted, "c": "is not Ready"})

	check(h.Place(job("third", map[string]string{"b": "pods pending", "c": "pods failed"})), "a",
		map[string]string{"b": "pods pending", "c": "is not Ready"})
}
