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

const zoneKey = "topology.kubernetes.io/zone"

// spreadNode is one node of a spread test: its zone ("" for none), and the GPUs it has and has in use.
type spreadNode struct {
	name, zone  string
	gpus, used  string
	taint       bool
	noHostLabel bool
}

// addSpreadNodes adds each node with its hostname label, as every kubelet registers it, and its zone.
func addSpreadNodes(h *placementtest.Harness, cluster string, nodes []spreadNode) {
	for _, n := range nodes {
		labels := map[string]string{corev1.LabelHostname: n.name}
		if n.noHostLabel {
			labels = map[string]string{}
		}
		if n.zone != "" {
			labels[zoneKey] = n.zone
		}
		used := n.used
		if used == "" {
			used = "0"
		}
		spec := placementtest.NodeSpec{Prefix: n.name, Count: 1, Labels: labels,
			Allocatable: res("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", n.gpus), Requested: res("nvidia.com/gpu", used)}
		if n.taint {
			spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}}
		}
		h.AddNodes(cluster, spec)
	}
}

// spreadTemplate is a worker template whose pods carry app=train and spread by key.
func spreadTemplate(key string, maxSkew int32, edit func(*corev1.TopologySpreadConstraint)) *corev1.PodTemplateSpec {
	tsc := corev1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "train"}}}
	if edit != nil {
		edit(&tsc)
	}
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train", "role": "worker"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker"}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{tsc}}}
}

// placeOnNodes places a job of pods 1-GPU workers of template on one cluster c1 of nodes, and returns how many
// pods went to each node and to each zone; it fails the test unless the job is placed, or, when reason is
// set, unless it is unschedulable saying reason (the counts are nil then).
func placeOnNodes(t *testing.T, nodes []spreadNode, template *corev1.PodTemplateSpec, pods int64, reason string) (perNode, perZone map[string]int64) {
	t.Helper()
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	addSpreadNodes(h, "c1", nodes)
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	job := placementtest.PyTorchJob("ml", "job").Component("worker", pods, res("nvidia.com/gpu", "1")).Obj()
	job.Components[0].PodTemplate = template
	d := h.Place(h.AddWorkload(job, nil))
	if reason != "" {
		if d.Status != structs.StatusUnschedulable || !strings.Contains(d.Reasons["c1"], reason) {
			t.Fatalf("decision %s (reasons %v), want unschedulable saying %q", d.Status, d.Reasons, reason)
		}
		return nil, nil
	}
	if d.Status != structs.StatusPlaced {
		t.Fatalf("decision %s (reasons %v), want placed", d.Status, d.Reasons)
	}
	zoneOf := map[string]string{}
	for _, n := range nodes {
		zoneOf[n.name] = n.zone
	}
	perNode, perZone = map[string]int64{}, map[string]int64{}
	for _, a := range d.Assignments {
		perNode[a.Node] += a.Pods
		perZone[zoneOf[a.Node]] += a.Pods
	}
	return perNode, perZone
}

// TestHardTopologySpreadBoundsEachDomain: pods under a DoNotSchedule topology spread constraint counting
// themselves go where kube-scheduler's PodTopologySpread filter lets them: no domain more than maxSkew past the
// emptiest, a domain they cannot use (full, or tainted unless the constraint honours taints) counting as empty,
// and nodes without the key taking none. Expected counts by hand, per case.
func TestHardTopologySpreadBoundsEachDomain(t *testing.T) {
	fourFree := []spreadNode{{name: "n1", gpus: "8"}, {name: "n2", gpus: "8"}, {name: "n3", gpus: "8"}, {name: "n4", gpus: "8"}}
	withFull := append(slices.Clone(fourFree), spreadNode{name: "n5", gpus: "8", used: "8"})
	withTainted := append(slices.Clone(fourFree), spreadNode{name: "n5", gpus: "8", taint: true})
	// zone a: 2 nodes of 4 free GPUs (room 8); zone b: one node of 2 (room 2).
	zones := []spreadNode{{name: "a1", zone: "a", gpus: "4"}, {name: "a2", zone: "a", gpus: "4"}, {name: "b1", zone: "b", gpus: "2"}}
	honour := corev1.NodeInclusionPolicyHonor
	tests := []struct {
		name     string
		nodes    []spreadNode
		template *corev1.PodTemplateSpec
		pods     int64
		// perDomain is the pods wanted per node (hostname) or zone; nil when unschedulable.
		perDomain map[string]int64
		byZone    bool
		reason    string
	}{
		{name: "even over free nodes", nodes: fourFree, template: spreadTemplate(corev1.LabelHostname, 1, nil), pods: 8,
			perDomain: map[string]int64{"n1": 2, "n2": 2, "n3": 2, "n4": 2}},
		{name: "uneven count, first nodes take one more", nodes: fourFree, template: spreadTemplate(corev1.LabelHostname, 1, nil), pods: 6,
			perDomain: map[string]int64{"n1": 2, "n2": 2, "n3": 1, "n4": 1}},
		{name: "a full node caps every other at maxSkew", nodes: withFull, template: spreadTemplate(corev1.LabelHostname, 1, nil), pods: 4,
			perDomain: map[string]int64{"n1": 1, "n2": 1, "n3": 1, "n4": 1}},
		{name: "a full node, more pods than maxSkew allows", nodes: withFull, template: spreadTemplate(corev1.LabelHostname, 1, nil), pods: 5,
			reason: "4 of its 5 pods fit under its topologySpreadConstraint on kubernetes.io/hostname (maxSkew 1): " +
				"kubernetes.io/hostname=n5 has room for 0 of them, so no other takes more than 1"},
		{name: "a tainted node counts as empty", nodes: withTainted, template: spreadTemplate(corev1.LabelHostname, 1, nil), pods: 8,
			reason: "4 of its 8 pods fit"},
		{name: "a tainted node left out when taints are honoured", nodes: withTainted, pods: 8,
			template:  spreadTemplate(corev1.LabelHostname, 1, func(c *corev1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honour }),
			perDomain: map[string]int64{"n1": 2, "n2": 2, "n3": 2, "n4": 2}},
		{name: "by zone, within the least room plus maxSkew", nodes: zones, template: spreadTemplate(zoneKey, 2, nil), pods: 6, byZone: true,
			perDomain: map[string]int64{"a": 4, "b": 2}},
		{name: "by zone, past it", nodes: zones, template: spreadTemplate(zoneKey, 2, nil), pods: 7,
			reason: "6 of its 7 pods fit under its topologySpreadConstraint on topology.kubernetes.io/zone (maxSkew 2): " +
				"topology.kubernetes.io/zone=b has room for 2 of them, so no other takes more than 4"},
		{name: "fewer zones than minDomains", nodes: zones, pods: 3,
			template: spreadTemplate(zoneKey, 1, func(c *corev1.TopologySpreadConstraint) { three := int32(3); c.MinDomains = &three }),
			reason:   "2 values of topology.kubernetes.io/zone are fewer than its minDomains 3, so none takes more than 1"},
		{name: "no node has the key", nodes: fourFree, template: spreadTemplate(zoneKey, 1, nil), pods: 1,
			reason: "no node it may use has the label topology.kubernetes.io/zone"},
		{name: "a node without the key takes none", pods: 2, template: spreadTemplate(zoneKey, 2, nil),
			nodes:     []spreadNode{{name: "keyless", gpus: "8"}, {name: "n1", zone: "a", gpus: "8"}},
			perDomain: map[string]int64{"n1": 2}},
		{name: "a node without its hostname label is its own host", pods: 2, template: spreadTemplate(corev1.LabelHostname, 1, nil),
			nodes:     []spreadNode{{name: "h1", gpus: "8", noHostLabel: true}, {name: "h2", gpus: "8", noHostLabel: true}},
			perDomain: map[string]int64{"h1": 1, "h2": 1}},
		{name: "a selector of other pods is not modelled", nodes: withFull, pods: 8,
			template: spreadTemplate(corev1.LabelHostname, 1, func(c *corev1.TopologySpreadConstraint) {
				c.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "serve"}}
			}),
			perDomain: map[string]int64{"n1": 8}},
		{name: "ScheduleAnyway is a preference", nodes: withFull, pods: 8,
			template: spreadTemplate(corev1.LabelHostname, 1, func(c *corev1.TopologySpreadConstraint) {
				c.WhenUnsatisfiable = corev1.ScheduleAnyway
			}),
			perDomain: map[string]int64{"n1": 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perNode, perZone := placeOnNodes(t, tt.nodes, tt.template, tt.pods, tt.reason)
			got := perNode
			if tt.byZone {
				got = perZone
			}
			if tt.perDomain != nil && !maps.Equal(got, tt.perDomain) {
				t.Errorf("pods per domain %v, want %v", got, tt.perDomain)
			}
		})
	}
}

// TestHardTopologySpreadDecidesTheCluster: four 1-GPU pods spread by node with maxSkew 1. BinPack prefers
// "packed", whose two nodes have 12 GPUs free among them against roomy's 16, but its third node is full, so
// neither free node may take a second pod there; they go to "roomy", four nodes of 4 free GPUs.
func TestHardTopologySpreadDecidesTheCluster(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("packed")
	addSpreadNodes(h, "packed", []spreadNode{{name: "p1", gpus: "8", used: "2"}, {name: "p2", gpus: "8", used: "2"},
		{name: "p3", gpus: "8", used: "8"}})
	h.AddCluster("roomy")
	addSpreadNodes(h, "roomy", []spreadNode{{name: "r1", gpus: "8", used: "4"}, {name: "r2", gpus: "8", used: "4"},
		{name: "r3", gpus: "8", used: "4"}, {name: "r4", gpus: "8", used: "4"}})
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	job := placementtest.PyTorchJob("ml", "job").Component("worker", 4, res("nvidia.com/gpu", "1")).Obj()
	job.Components[0].PodTemplate = spreadTemplate(corev1.LabelHostname, 1, nil)
	d := h.Place(h.AddWorkload(job, nil))
	if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, []string{"roomy"}) {
		t.Fatalf("decision %s on %v (reasons %v), want placed on roomy", d.Status, d.Clusters, d.Reasons)
	}
	if !strings.Contains(d.Reasons["packed"], "2 of its 4 pods fit under its topologySpreadConstraint") {
		t.Errorf("reason for packed %q, want one naming the spread constraint", d.Reasons["packed"])
	}
}

// affinityTemplate is a worker template whose pods carry app=train and require pods of app=<selects> in the
// same domain of key.
func affinityTemplate(key, selects string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker"}}, Affinity: &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": selects}}, TopologyKey: key}}}}}}
}

// TestRequiredPodAffinityToItselfKeepsPodsTogether: pods with a required pod affinity to their own pods all run in
// one domain of its key, as kube-scheduler keeps every pod after the first to the first's domain: the first zone
// by name with room for all of them, or none. Zone a has room for 8 GPUs over two nodes, zone b for 2.
func TestRequiredPodAffinityToItselfKeepsPodsTogether(t *testing.T) {
	zones := []spreadNode{{name: "a1", zone: "a", gpus: "4"}, {name: "a2", zone: "a", gpus: "4"}, {name: "b1", zone: "b", gpus: "2"}}
	tests := []struct {
		name     string
		nodes    []spreadNode
		template *corev1.PodTemplateSpec
		pods     int64
		want     map[string]int64
		reason   string
	}{
		{name: "two pods fit the first zone", nodes: zones, template: affinityTemplate(zoneKey, "train"), pods: 2,
			want: map[string]int64{"a": 2}},
		{name: "eight only in zone a", nodes: zones, template: affinityTemplate(zoneKey, "train"), pods: 8, want: map[string]int64{"a": 8}},
		{name: "nine fit no zone", nodes: zones, template: affinityTemplate(zoneKey, "train"), pods: 9,
			reason: "its required pod affinity to its own pods keeps all 9 of them in one topology.kubernetes.io/zone, and the " +
				"roomiest, topology.kubernetes.io/zone=a, has room for 8"},
		{name: "a zone the first in name order has no room", pods: 3, template: affinityTemplate(zoneKey, "train"),
			nodes: []spreadNode{{name: "a1", zone: "a", gpus: "2"}, {name: "b1", zone: "b", gpus: "8"}}, want: map[string]int64{"b": 3}},
		{name: "by hostname: one node", nodes: zones, template: affinityTemplate(corev1.LabelHostname, "train"), pods: 4,
			want: map[string]int64{"a": 4}},
		{name: "no node has the key", template: affinityTemplate(zoneKey, "train"), pods: 1,
			nodes:  []spreadNode{{name: "n1", gpus: "8"}},
			reason: "no node it may use has the label topology.kubernetes.io/zone"},
		{name: "affinity to other pods is not modelled", nodes: zones, template: affinityTemplate(zoneKey, "serve"), pods: 10,
			want: map[string]int64{"a": 8, "b": 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perNode, perZone := placeOnNodes(t, tt.nodes, tt.template, tt.pods, tt.reason)
			if tt.want == nil {
				return
			}
			if !maps.Equal(perZone, tt.want) {
				t.Errorf("pods per zone %v, want %v", perZone, tt.want)
			}
			if tt.template.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey == corev1.LabelHostname && len(perNode) != 1 {
				t.Errorf("pods on nodes %v, want one", perNode)
			}
		})
	}
}

// TestSeveralTopologyKeysTogether: a spread by zone and one by node (a common pair), or pod affinities by zone and
// by node, are satisfied together: two 1-GPU pods fit four free nodes in two zones, and four pods that keep to
// one zone and one node go to the node that has room for all of them.
func TestSeveralTopologyKeysTogether(t *testing.T) {
	byZoneAndNode := spreadTemplate(zoneKey, 1, nil)
	byZoneAndNode.Spec.TopologySpreadConstraints = append(byZoneAndNode.Spec.TopologySpreadConstraints,
		spreadTemplate(corev1.LabelHostname, 1, nil).Spec.TopologySpreadConstraints...)
	togetherByZoneAndNode := affinityTemplate(zoneKey, "train")
	togetherByZoneAndNode.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		togetherByZoneAndNode.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
		affinityTemplate(corev1.LabelHostname, "train").Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	tests := []struct {
		name     string
		nodes    []spreadNode
		template *corev1.PodTemplateSpec
		pods     int64
		perNode  map[string]int64
	}{
		{name: "spread by zone and by node", template: byZoneAndNode, pods: 2,
			nodes: []spreadNode{{name: "h1", zone: "b", gpus: "8"}, {name: "h2", zone: "b", gpus: "8"},
				{name: "h3", zone: "a", gpus: "8"}, {name: "h4", zone: "a", gpus: "8"}}},
		{name: "together by zone and by node", template: togetherByZoneAndNode, pods: 4,
			nodes:   []spreadNode{{name: "n-a", zone: "z2", gpus: "8"}, {name: "n-b", zone: "z1", gpus: "4"}, {name: "n-c", zone: "z1", gpus: "2"}},
			perNode: map[string]int64{"n-a": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			perNode, _ := placeOnNodes(t, tt.nodes, tt.template, tt.pods, "")
			if tt.perNode != nil && !maps.Equal(perNode, tt.perNode) {
				t.Errorf("pods per node %v, want %v", perNode, tt.perNode)
			}
		})
	}
}

// TestAnEmptySelectorCountsThePodsThemselves: a spread constraint whose labelSelector is {} selects every pod,
// its own pods among them; a nil one selects none.
func TestAnEmptySelectorCountsThePodsThemselves(t *testing.T) {
	withFull := []spreadNode{{name: "n1", gpus: "8"}, {name: "n2", gpus: "8"}, {name: "n3", gpus: "8", used: "8"}}
	empty := spreadTemplate(corev1.LabelHostname, 1, func(c *corev1.TopologySpreadConstraint) { c.LabelSelector = &metav1.LabelSelector{} })
	placeOnNodes(t, withFull, empty, 4, "2 of its 4 pods fit under its topologySpreadConstraint")
	none := spreadTemplate(corev1.LabelHostname, 1, func(c *corev1.TopologySpreadConstraint) { c.LabelSelector = nil })
	if perNode, _ := placeOnNodes(t, withFull, none, 4, ""); perNode["n1"] != 4 {
		t.Errorf("pods per node %v under a nil selector, want all 4 on n1", perNode)
	}
}

// TestConstraintsTogetherAsKubeSchedulerPlacesPods: pods under several constraints are placed one at a time, each
// where every constraint lets it, so no more fit than kube-scheduler would place. Zones a (a1, a2) and b (b1), 8
// GPUs each. Spread by zone and by node, both maxSkew 1: a1, b1, a2, b1, a1, and a sixth pod has nowhere to go
// (zone a would lead by 2, or b1 by 2). Together by zone and spread by node: zone a, whose nodes may hold one
// pod each while b1 holds none.
func TestConstraintsTogetherAsKubeSchedulerPlacesPods(t *testing.T) {
	nodes := []spreadNode{{name: "a1", zone: "a", gpus: "8"}, {name: "a2", zone: "a", gpus: "8"}, {name: "b1", zone: "b", gpus: "8"}}
	byZoneAndNode := spreadTemplate(zoneKey, 1, nil)
	byZoneAndNode.Spec.TopologySpreadConstraints = append(byZoneAndNode.Spec.TopologySpreadConstraints,
		spreadTemplate(corev1.LabelHostname, 1, nil).Spec.TopologySpreadConstraints...)
	togetherSpread := affinityTemplate(zoneKey, "train")
	togetherSpread.Spec.TopologySpreadConstraints = spreadTemplate(corev1.LabelHostname, 1, nil).Spec.TopologySpreadConstraints
	if perNode, _ := placeOnNodes(t, nodes, byZoneAndNode, 5, ""); !maps.Equal(perNode, map[string]int64{"a1": 2, "a2": 1, "b1": 2}) {
		t.Errorf("spread by zone and node, 5 pods: %v, want a1 2, a2 1, b1 2", perNode)
	}
	placeOnNodes(t, nodes, byZoneAndNode, 6, "5 of its 6 pods fit, placed one at a time as kube-scheduler does")
	if perNode, _ := placeOnNodes(t, nodes, togetherSpread, 2, ""); !maps.Equal(perNode, map[string]int64{"a1": 1, "a2": 1}) {
		t.Errorf("together by zone, spread by node, 2 pods: %v, want one on each node of zone a", perNode)
	}
	placeOnNodes(t, nodes, togetherSpread, 3, "2 of its 3 pods fit")
}
