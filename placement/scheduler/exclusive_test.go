package scheduler_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/structs"
)

const poolKey = "cloud.google.com/gke-nodepool"

// pool is a node pool of an exclusive-topology test: nodes nodes of gpus GPUs each, labelled with the pool's
// name unless unlabelled.
type pool struct {
	name       string
	nodes      int
	gpus       string
	unlabelled bool
}

// addPools adds the nodes of each pool to cluster, and returns the pool of each node by name.
func addPools(h *placementtest.Harness, cluster string, pools []pool) map[string]string {
	poolOf := map[string]string{}
	for _, p := range pools {
		labels := map[string]string{poolKey: p.name}
		if p.unlabelled {
			labels = nil
		}
		prefix := cluster + "-" + p.name
		h.AddNodes(cluster, placementtest.NodeSpec{Prefix: prefix, Count: p.nodes, Labels: labels,
			Allocatable: res("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", p.gpus)})
		for i := range max(1, p.nodes) {
			name := prefix
			if p.nodes > 1 {
				name = fmt.Sprintf("%s-%d", prefix, i)
			}
			poolOf[name] = p.name
		}
	}
	return poolOf
}

// leaderWorkerSet is the analysis of a LeaderWorkerSet of groups groups of size 1-GPU pods, each group in a pool
// of its own.
func leaderWorkerSet(groups, size int64) *karta.Analysis {
	a := placementtest.Workload("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "ml", "lws").
		Component("leader", groups, res("nvidia.com/gpu", "1")).
		Component("worker", groups*(size-1), res("nvidia.com/gpu", "1")).Obj()
	for range groups {
		a.ExclusiveUnits = append(a.ExclusiveUnits, karta.ExclusiveUnit{TopologyKey: poolKey, Pods: []karta.UnitPods{
			{Component: "leader", Pods: 1}, {Component: "worker", Pods: size - 1}}})
	}
	return a
}

func TestExclusiveTopologyUnits(t *testing.T) {
	tests := []struct {
		name   string
		pools  []pool
		reason string // "" when the workload must be placed
	}{
		{name: "a pool per group", pools: []pool{{name: "a", nodes: 1, gpus: "4"}, {name: "b", nodes: 2, gpus: "2"}, {name: "c", nodes: 1, gpus: "8"}}},
		{name: "a spare pool too small", pools: []pool{{name: "a", nodes: 1, gpus: "2"}, {name: "b", nodes: 1, gpus: "4"},
			{name: "c", nodes: 1, gpus: "4"}, {name: "d", nodes: 1, gpus: "4"}}},
		{name: "two roomy pools for three groups", pools: []pool{{name: "a", nodes: 2, gpus: "8"}, {name: "b", nodes: 2, gpus: "8"}},
			reason: "its exclusive topology keeps each of its 3 units (leader 1 + worker 3) in a " + poolKey +
				" of its own: 2 of the 2 values of " + poolKey + " on the cluster's nodes have room for one, and 2 units fitted before this one"},
		{name: "one pool too small", pools: []pool{{name: "a", nodes: 1, gpus: "4"}, {name: "b", nodes: 1, gpus: "3"}, {name: "c", nodes: 1, gpus: "8"}},
			reason: "2 of the 3 values of " + poolKey + " on the cluster's nodes have room for one"},
		{name: "no node in a pool", pools: []pool{{name: "a", nodes: 4, gpus: "8", unlabelled: true}},
			reason: "in a " + poolKey + " of its own, and no node has the label " + poolKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			poolOf := addPools(h, "c1", tt.pools)
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			d := h.Place(h.AddWorkload(leaderWorkerSet(3, 4), nil))
			if tt.reason != "" {
				if d.Status != structs.StatusUnschedulable || !strings.Contains(d.Reasons["c1"], tt.reason) {
					t.Fatalf("decision %s (reasons %v), want unschedulable saying %q", d.Status, d.Reasons, tt.reason)
				}
				return
			}
			if d.Status != structs.StatusPlaced {
				t.Fatalf("decision %s (reasons %v), want placed", d.Status, d.Reasons)
			}
			// Each pool used holds one whole group: its leader and its three workers.
			perPool := map[string]map[string]int64{}
			for _, a := range d.Assignments {
				p := poolOf[a.Node]
				if perPool[p] == nil {
					perPool[p] = map[string]int64{}
				}
				perPool[p][a.Component] += a.Pods
			}
			if len(perPool) != 3 {
				t.Fatalf("groups went to pools %v, want three pools", slices.Sorted(maps.Keys(perPool)))
			}
			for p, pods := range perPool {
				if pods["leader"] != 1 || pods["worker"] != 3 {
					t.Errorf("pool %s holds %v, want one group: leader 1 and worker 3", p, pods)
				}
			}
		})
	}
}

// TestExclusiveTopologyChoosesCluster: a cluster with more GPUs free but too few pools loses to one with a pool for
// every group, and a workload without the annotation's units goes where the GPUs are.
func TestExclusiveTopologyChoosesCluster(t *testing.T) {
	for _, exclusive := range []bool{true, false} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("big")
			addPools(h, "big", []pool{{name: "a", nodes: 4, gpus: "8"}})
			h.AddCluster("pooled")
			addPools(h, "pooled", []pool{{name: "a", nodes: 1, gpus: "4"}, {name: "b", nodes: 1, gpus: "4"}})
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: v1alpha1.ScoringSpread}))
			lws := leaderWorkerSet(2, 4)
			want := "pooled"
			if !exclusive {
				lws.ExclusiveUnits, want = nil, "big"
			}
			d := h.Place(h.AddWorkload(lws, nil))
			if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, []string{want}) {
				t.Fatalf("decision %s on %v (reasons %v), want placed on %s", d.Status, d.Clusters, d.Reasons, want)
			}
			if exclusive && !strings.Contains(d.Reasons["big"], "exclusive topology") {
				t.Errorf("reason for big = %q, want it to name the exclusive topology", d.Reasons["big"])
			}
		})
	}
}

// TestExclusiveTopologyGivesBackWhatAFailedPoolTook: a unit tried on a pool too small for it takes nothing there,
// so the workload's pods outside units still fit that pool.
func TestExclusiveTopologyGivesBackWhatAFailedPoolTook(t *testing.T) {
	h := placementtest.NewHarness(t)
	h.AddCluster("c1")
	poolOf := addPools(h, "c1", []pool{{name: "a", nodes: 1, gpus: "3"}, {name: "b", nodes: 1, gpus: "4"}, {name: "c", nodes: 1, gpus: "4"}})
	h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
	js := placementtest.Workload("jobset.x-k8s.io/v1alpha2", "JobSet", "ml", "js").
		Component("workers", 8, res("nvidia.com/gpu", "1")).
		Component("driver", 3, res("nvidia.com/gpu", "1")).Obj()
	for range 2 {
		js.ExclusiveUnits = append(js.ExclusiveUnits, karta.ExclusiveUnit{TopologyKey: poolKey,
			Pods: []karta.UnitPods{{Component: "workers", Pods: 4}}})
	}
	d := h.Place(h.AddWorkload(js, nil))
	if d.Status != structs.StatusPlaced {
		t.Fatalf("decision %s (reasons %v), want placed", d.Status, d.Reasons)
	}
	perPool := map[string]string{}
	for _, a := range d.Assignments {
		perPool[poolOf[a.Node]] += fmt.Sprintf("%s %d;", a.Component, a.Pods)
	}
	want := map[string]string{"a": "driver 3;", "b": "workers 4;", "c": "workers 4;"}
	if !maps.Equal(perPool, want) {
		t.Errorf("pods per pool = %v, want %v", perPool, want)
	}
}

// TestExclusiveTopologyKeepsOutOfOtherWorkloadsDomains: the controller's anti-affinity is to every pod of its kind
// in the namespace, so a pool that another LeaderWorkerSet of the namespace holds (reserved, or running its pods)
// takes no group of a new one; a LeaderWorkerSet of another namespace may share it.
func TestExclusiveTopologyKeepsOutOfOtherWorkloadsDomains(t *testing.T) {
	lwsIn := func(namespace, name string, groups int64) *karta.Analysis {
		a := leaderWorkerSet(groups, 2)
		a.Namespace, a.Name = namespace, name
		return a
	}
	tests := []struct {
		name      string
		namespace string
		running   bool // the first LWS's pods run (reported on their nodes) instead of being reserved
		// kept: the first LWS, grown past the cluster, is placed nowhere while its pods keep running (Kept).
		kept   bool
		reason string
	}{
		{name: "reserved by another of the namespace", namespace: "ml",
			reason: "the 3 values of " + poolKey + " on the cluster's nodes have room for one (2 of them held by other LeaderWorkerSets of namespace ml"},
		{name: "running pods of another of the namespace", namespace: "ml", running: true,
			reason: "(2 of them held by other LeaderWorkerSets of namespace ml"},
		{name: "another namespace", namespace: "other"},
		{name: "running pods of another of the namespace placed nowhere", namespace: "ml", running: true, kept: true,
			reason: "(2 of them held by other LeaderWorkerSets of namespace ml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			pools := []pool{{name: "a", nodes: 1, gpus: "8"}, {name: "b", nodes: 1, gpus: "8"}, {name: "c", nodes: 1, gpus: "8"}}
			addPools(h, "c1", pools)
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			firstID := h.AddWorkload(lwsIn("ml", "first", 2), nil)
			if d := h.Place(firstID); d.Status != structs.StatusPlaced {
				t.Fatalf("first LWS: %s (%v)", d.Status, d.Reasons)
			}
			if tt.running {
				// Its pods run on the pools' first nodes, and the reservation is gone once they are reported.
				label := structs.WorkloadLabelValue(firstID)
				for _, p := range pools[:2] {
					h.AddNodes("c1", placementtest.NodeSpec{Prefix: "c1-" + p.name, Labels: map[string]string{poolKey: p.name},
						Allocatable: res("cpu", "64", "memory", "512Gi", "nvidia.com/gpu", p.gpus), Requested: res("nvidia.com/gpu", "2"),
						PodsByWorkload: map[string]int64{label: 2}})
				}
				if n := len(h.Store.Snapshot().ReservationsOf(firstID)); n != 0 {
					t.Fatalf("first LWS still holds %d reservations once its pods are reported", n)
				}
			}
			if tt.kept {
				grown, err := h.Store.UpsertWorkload(h.NextSeq(), structs.WorkloadInfo{Analysis: lwsIn("ml", "first", 4), Generation: 2})
				if err != nil {
					t.Fatal(err)
				}
				if d := h.Place(grown.ID); d.Status != structs.StatusUnschedulable {
					t.Fatalf("first LWS grown to 4 groups: %s, want unschedulable", d.Status)
				}
				if wl := h.Store.Snapshot().Workload(firstID); wl.Placement != nil || !slices.Equal(wl.Kept, []string{"c1"}) {
					t.Fatalf("first LWS placement %+v, kept %v: want placed nowhere, kept on c1", wl.Placement, wl.Kept)
				}
			}
			d := h.Place(h.AddWorkload(lwsIn(tt.namespace, "second", 2), nil))
			if tt.reason == "" {
				if d.Status != structs.StatusPlaced {
					t.Fatalf("second LWS: %s (%v), want placed", d.Status, d.Reasons)
				}
				return
			}
			if d.Status != structs.StatusUnschedulable || !strings.Contains(d.Reasons["c1"], tt.reason) {
				t.Fatalf("second LWS: %s (%v), want unschedulable saying %q", d.Status, d.Reasons, tt.reason)
			}
		})
	}
}

// jobSetWithDriver is the analysis, through the built-in JobSet RI, of a JobSet of workers exclusive Jobs of 2
// 1-GPU pods (the annotation on their Job template) and one driver Job of one 1-GPU pod without it.
func jobSetWithDriver(t *testing.T, workers int) *karta.Analysis {
	t.Helper()
	obj, err := karta.ParseObject([]byte(fmt.Sprintf(`apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml}
spec:
  replicatedJobs:
  - name: workers
    replicas: %d
    template:
      metadata: {annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: %s}}
      spec:
        parallelism: 2
        template: {spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}}}]}}
  - name: driver
    template:
      spec:
        template: {spec: {containers: [{name: c, resources: {requests: {nvidia.com/gpu: 1}}}]}}
`, workers, poolKey)), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	ri, ok := karta.NewRegistry(builtins...).Lookup(karta.GVKOf(obj))
	if !ok {
		t.Fatal("no built-in JobSet RI")
	}
	a, err := ri.Analyze(obj)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestExclusiveTopologyKeepsOtherPodsOut: JobSet's anti-affinity selects every pod of the JobSet, so the pod of
// its non-exclusive driver Job may not run in a pool one of its exclusive worker Jobs took. Three pools for
// three worker Jobs leave it no node; an unlabelled node, or a fourth pool, takes it.
func TestExclusiveTopologyKeepsOtherPodsOut(t *testing.T) {
	tests := []struct {
		name       string
		pools      []pool
		driverPool string // the pool the driver's pod must go to; "" when the JobSet must not be placed
		reason     string
	}{
		{name: "a pool per worker job and none for the driver",
			pools: []pool{{name: "a", nodes: 1, gpus: "8"}, {name: "b", nodes: 1, gpus: "8"}, {name: "c", nodes: 1, gpus: "8"}},
			reason: "pod replicatedjob/driver (nvidia.com/gpu 1) fits no node: the 3 nodes it may use are all in the domains its " +
				"workload's exclusive units took, which their controller keeps the workload's other pods out of"},
		{name: "the node outside the worker jobs' pools too small for the driver",
			pools: []pool{{name: "a", nodes: 1, gpus: "8"}, {name: "b", nodes: 1, gpus: "8"}, {name: "c", nodes: 1, gpus: "8"},
				{name: "z", nodes: 1, gpus: "0", unlabelled: true}},
			reason: "fits no node: none of the 1 nodes it may use outside the domains"},
		{name: "an unlabelled node for the driver",
			pools: []pool{{name: "a", nodes: 1, gpus: "8"}, {name: "b", nodes: 1, gpus: "8"}, {name: "c", nodes: 1, gpus: "8"},
				{name: "z", nodes: 1, gpus: "1", unlabelled: true}},
			driverPool: "z"},
		{name: "a fourth pool for the driver",
			pools: []pool{{name: "a", nodes: 1, gpus: "8"}, {name: "b", nodes: 1, gpus: "8"}, {name: "c", nodes: 1, gpus: "8"},
				{name: "d", nodes: 1, gpus: "1"}},
			driverPool: "d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			poolOf := addPools(h, "c1", tt.pools)
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			d := h.Place(h.AddWorkload(jobSetWithDriver(t, 3), nil))
			if tt.driverPool == "" {
				if d.Status != structs.StatusUnschedulable || !strings.Contains(d.Reasons["c1"], tt.reason) {
					t.Fatalf("decision %s (reasons %v), want unschedulable saying %q", d.Status, d.Reasons, tt.reason)
				}
				return
			}
			if d.Status != structs.StatusPlaced {
				t.Fatalf("decision %s (reasons %v), want placed", d.Status, d.Reasons)
			}
			perPool := map[string][]string{}
			for _, a := range d.Assignments {
				perPool[poolOf[a.Node]] = append(perPool[poolOf[a.Node]], fmt.Sprintf("%s %d", a.Component, a.Pods))
			}
			for p, pods := range perPool {
				want := []string{"replicatedjob/workers 2"}
				if p == tt.driverPool {
					want = []string{"replicatedjob/driver 1"}
				}
				if !slices.Equal(pods, want) {
					t.Errorf("pool %s holds %v, want %v", p, pods, want)
				}
			}
			if len(perPool) != 4 {
				t.Errorf("pods went to pools %v, want four", slices.Sorted(maps.Keys(perPool)))
			}
		})
	}
}

// TestExclusiveTopologyReasonOfOneUnit: a workload of one unit is not told about "each of its 1 units".
func TestExclusiveTopologyReasonOfOneUnit(t *testing.T) {
	tests := []struct {
		name   string
		pools  []pool
		reason string
	}{
		{name: "no node in a pool", pools: []pool{{name: "a", nodes: 1, gpus: "8", unlabelled: true}},
			reason: "its exclusive topology keeps its 1 unit (leader 1 + worker 3) in a " + poolKey + " of its own, and no node has the label"},
		{name: "a pool too small", pools: []pool{{name: "a", nodes: 1, gpus: "2"}, {name: "z", nodes: 1, gpus: "8", unlabelled: true}},
			reason: "its exclusive topology keeps its 1 unit (leader 1 + worker 3) in a " + poolKey + " of its own: none of the 1 value of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			addPools(h, "c1", tt.pools)
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			d := h.Place(h.AddWorkload(leaderWorkerSet(1, 4), nil))
			if d.Status != structs.StatusUnschedulable || !strings.Contains(d.Reasons["c1"], tt.reason) {
				t.Fatalf("decision %s (reasons %v), want unschedulable saying %q", d.Status, d.Reasons, tt.reason)
			}
		})
	}
}

// TestExclusiveTopologyJobSetsOfEveryNamespace: JobSet's anti-affinity has an empty namespaceSelector, so an
// exclusive Job keeps out of the pools where another JobSet's pods run or are reserved, in any namespace (the
// built-in RI's units say allNamespaces), where a LeaderWorkerSet's groups keep apart only within their namespace
// (TestExclusiveTopologyKeepsOutOfOtherWorkloadsDomains). The first JobSet's two worker Jobs take two pools and its
// driver the third, which leaves the second none.
func TestExclusiveTopologyJobSetsOfEveryNamespace(t *testing.T) {
	tests := []struct {
		name, namespace string
		reason          string
	}{
		{name: "same namespace", namespace: "ml",
			reason: "3 of the 3 values of " + poolKey + " on the cluster's nodes have room for one (3 of them held by other JobSets of any namespace"},
		{name: "another namespace", namespace: "other",
			reason: "3 of the 3 values of " + poolKey + " on the cluster's nodes have room for one (3 of them held by other JobSets of any namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			addPools(h, "c1", []pool{{name: "a", nodes: 1, gpus: "8"}, {name: "b", nodes: 1, gpus: "8"}, {name: "c", nodes: 1, gpus: "8"},
				{name: "z", nodes: 1, gpus: "8", unlabelled: true}})
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			first := jobSetWithDriver(t, 2)
			if d := h.Place(h.AddWorkload(first, nil)); d.Status != structs.StatusPlaced {
				t.Fatalf("first JobSet: %s (%v)", d.Status, d.Reasons)
			}
			second := jobSetWithDriver(t, 2)
			second.Namespace, second.Name = tt.namespace, "second"
			d := h.Place(h.AddWorkload(second, nil))
			if d.Status != structs.StatusUnschedulable || !strings.Contains(d.Reasons["c1"], tt.reason) {
				t.Fatalf("second JobSet: %s (%v), want unschedulable saying %q", d.Status, d.Reasons, tt.reason)
			}
		})
	}
}
