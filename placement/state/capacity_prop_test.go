package state_test

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// TestCapacityRowsProperty runs random sequences of node observations (some reporting a workload's pods),
// node deletions, placements, workload deletions, expiry and clusters leaving, and checks after every step that
// each cluster's incrementally maintained capacity row says exactly what recomputing it from the nodes and
// reservations says: per node, free = max(0, allocatable − requested − reserved); per cluster, the sums and
// maxima over schedulable nodes; nodes in name order, exactly those observed and not deleted since, as last
// observed.
func TestCapacityRowsProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := placementtest.NewHarness(t)
		clusters := []string{"a", "b"}
		// observed is the test's own record of every cluster's nodes, as last observed: the rows are where
		// the store keeps its nodes, so they are checked against it.
		observed := map[string]map[string]structs.NodeInfo{}
		observe := func(info structs.NodeInfo) {
			if err := h.Store.UpsertNodes(h.NextSeq(), info); err != nil {
				rt.Fatal(err)
			}
			if observed[info.Cluster] == nil {
				observed[info.Cluster] = map[string]structs.NodeInfo{}
			}
			observed[info.Cluster][info.Name] = info
		}
		for _, c := range clusters {
			h.AddCluster(c)
			// Seed the cluster node by node in random order, so chunks fill and split through the incremental path.
			seed := rapid.IntRange(0, 200).Draw(rt, "seedNodes")
			for _, i := range rapid.Permutation(rangeInts(seed)).Draw(rt, "seedOrder") {
				observe(structs.NodeInfo{Cluster: c, Name: fmt.Sprintf("n-%03d", i), Allocatable: res("cpu", "16")})
			}
		}
		h.AddPolicy(placementtest.Policy("all", v1alpha1.SchedulePolicySpec{}))
		var workloads []string
		for step := range rapid.IntRange(1, 40).Draw(rt, "steps") {
			cluster := rapid.SampledFrom(clusters).Draw(rt, "cluster")
			node := fmt.Sprintf("n-%03d", rapid.IntRange(0, 260).Draw(rt, "node"))
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 0, 1: // a node is observed, possibly running some workload's pods
				info := structs.NodeInfo{Cluster: cluster, Name: node,
					Unschedulable: rapid.IntRange(0, 9).Draw(rt, "cordon") == 0,
					Allocatable:   res("cpu", fmt.Sprint(rapid.IntRange(1, 32).Draw(rt, "cpu"))),
					Requested:     res("cpu", fmt.Sprint(rapid.IntRange(0, 8).Draw(rt, "used")))}
				if len(workloads) > 0 && rapid.Bool().Draw(rt, "reportsPods") {
					id := rapid.SampledFrom(workloads).Draw(rt, "running")
					info.PodsByWorkload = map[string]int64{structs.WorkloadLabelValue(id): int64(rapid.IntRange(1, 3).Draw(rt, "pods"))}
				}
				observe(info)
			case 2:
				if err := h.Store.DeleteNode(h.NextSeq(), cluster, node); err != nil {
					rt.Fatal(err)
				}
				delete(observed[cluster], node)
			case 3, 4:
				id := h.AddWorkload(placementtest.PyTorchJob("ns", fmt.Sprintf("w%d", step)).
					Component("worker", int64(rapid.IntRange(1, 3).Draw(rt, "replicas")),
						res("cpu", fmt.Sprint(rapid.IntRange(1, 6).Draw(rt, "podCPU")))).Obj(), nil)
				workloads = append(workloads, id)
				h.Place(id)
			case 5:
				if len(workloads) > 0 {
					if err := h.Store.DeleteWorkload(h.NextSeq(), rapid.SampledFrom(workloads).Draw(rt, "victim")); err != nil {
						rt.Fatal(err)
					}
				}
			case 6:
				h.Now = h.Now.Add(time.Duration(rapid.IntRange(0, 10).Draw(rt, "minutes")) * time.Minute)
				if _, err := h.Store.ExpireReservations(h.NextSeq(), h.Now); err != nil {
					rt.Fatal(err)
				}
			case 7: // the cluster leaves the fleet with its nodes, and comes back empty
				if err := h.Store.DeleteCluster(h.NextSeq(), cluster); err != nil {
					rt.Fatal(err)
				}
				delete(observed, cluster)
				h.AddCluster(cluster)
			}
			checkCapacityRows(rt, h, observed)
		}
	})
}

func checkCapacityRows(rt *rapid.T, h *placementtest.Harness, observed map[string]map[string]structs.NodeInfo) {
	snap := h.Store.Snapshot()
	n := snap.Resources().Len()
	// What each node holds is found by scanning every reservation, independently of the per-node lists.
	all := snap.Reservations()
	// The rows the scheduler reads are the registered clusters' current rows, in name order.
	var registered []*structs.ClusterCapacity
	for _, c := range snap.Clusters() {
		registered = append(registered, snap.Capacity(c.Name))
	}
	if got := snap.Capacities(); !slices.Equal(got, registered) {
		rt.Fatalf("Capacities() holds %d rows that are not the registered clusters' current %d rows", len(got), len(registered))
	}
	for _, c := range snap.Clusters() {
		row := snap.Capacity(c.Name)
		nodes := snap.Nodes(c.Name)
		if row == nil {
			rt.Fatalf("cluster %s has no capacity row", c.Name)
		}
		names := slices.Sorted(maps.Keys(observed[c.Name]))
		if row.NodeCount != len(names) || len(nodes) != len(names) {
			rt.Fatalf("cluster %s: row counts %d nodes and Nodes returns %d, want the %d observed", c.Name,
				row.NodeCount, len(nodes), len(names))
		}
		cpu := structs.ResourceCPU
		wantFree := make(structs.Vector, n)
		wantMax := make(structs.Vector, n)
		for _, ch := range row.Chunks {
			if len(ch.Nodes) == 0 || len(ch.Nodes) > structs.MaxChunkNodes {
				rt.Fatalf("cluster %s: chunk of %d nodes", c.Name, len(ch.Nodes))
			}
		}
		i := 0
		for nc := range row.All() {
			node := nodes[i]
			info := observed[c.Name][names[i]]
			i++
			if nc.Node != node || node.Name != info.Name {
				rt.Fatalf("cluster %s: row node %s, Nodes gives %s, want %s", c.Name, nc.Node.Name, node.Name, info.Name)
			}
			if node.Unschedulable != info.Unschedulable ||
				node.Allocatable.Get(cpu) != info.Allocatable.Cpu().MilliValue() ||
				node.Requested.Get(cpu) != info.Requested.Cpu().MilliValue() {
				rt.Fatalf("node %s/%s: cordoned %v, cpu %d of %d requested; observed cordoned %v, cpu %s of %s", c.Name,
					node.Name, node.Unschedulable, node.Requested.Get(cpu), node.Allocatable.Get(cpu),
					info.Unschedulable, info.Requested.Cpu(), info.Allocatable.Cpu())
			}
			reserved := make(structs.Vector, n)
			var ids, holders []string
			for _, r := range all {
				if on := r.On(c.Name, node.Name); on != nil {
					reserved.AddInPlace(on.Request, 1)
					ids = append(ids, r.ID)
					holders = append(holders, r.WorkloadID)
				}
			}
			slices.Sort(holders)
			if !slices.Equal(nc.ReservedBy, holders) {
				rt.Fatalf("node %s/%s lists reserving workloads %v, want %v", c.Name, node.Name, nc.ReservedBy, holders)
			}
			var on []string
			for _, r := range snap.ReservationsOn(c.Name, node.Name) {
				on = append(on, r.ID)
			}
			if !slices.Equal(on, ids) {
				rt.Fatalf("ReservationsOn(%s, %s) = %v, want %v", c.Name, node.Name, on, ids)
			}
			for r := range n {
				want := max(0, node.Allocatable.Get(r)-node.Requested.Get(r)-reserved.Get(r))
				if nc.Free.Get(r) != want || nc.Reserved.Get(r) != reserved.Get(r) {
					rt.Fatalf("node %s/%s resource %d: free %d reserved %d, want %d and %d", c.Name, node.Name, r,
						nc.Free.Get(r), nc.Reserved.Get(r), want, reserved.Get(r))
				}
				if !node.Unschedulable {
					wantFree[r] += want
					wantMax[r] = max(wantMax[r], want)
				}
			}
		}
		for r := range n {
			if row.Free.Get(r) != wantFree[r] || row.MaxFree.Get(r) != wantMax[r] {
				rt.Fatalf("cluster %s resource %d: free %d max %d, want %d and %d", c.Name, r,
					row.Free.Get(r), row.MaxFree.Get(r), wantFree[r], wantMax[r])
			}
		}
	}
}

var res = placementtest.Res

func rangeInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
