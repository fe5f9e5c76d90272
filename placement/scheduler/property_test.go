package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// TestNoNodeOvercommittedProperty places random gangs on random fleets, interleaved with pods showing up on
// nodes, deletions and reservation expiry, and checks after every step that no node holds more than its
// allocatable, and that every placed decision packs exactly the workload's pods.
func TestNoNodeOvercommittedProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := placementtest.NewHarness(t)
		clusters := rapid.IntRange(1, 3).Draw(rt, "clusters")
		for c := range clusters {
			name := fmt.Sprintf("c%d", c)
			h.AddCluster(name)
			for n := range rapid.IntRange(1, 4).Draw(rt, "nodes") {
				cpu := rapid.IntRange(1, 16).Draw(rt, "cpu")
				gpu := rapid.IntRange(0, 8).Draw(rt, "gpu")
				used := rapid.IntRange(0, cpu).Draw(rt, "usedCPU")
				h.AddNodes(name, placementtest.NodeSpec{Prefix: fmt.Sprintf("n%d", n),
					Allocatable: res("cpu", fmt.Sprint(cpu), "memory", "64Gi", "nvidia.com/gpu", fmt.Sprint(gpu), "pods", "4"),
					Requested:   res("cpu", fmt.Sprint(used))})
			}
		}
		scoring := rapid.SampledFrom([]v1alpha1.ScoringStrategy{v1alpha1.ScoringBinPack, v1alpha1.ScoringSpread}).Draw(rt, "scoring")
		h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: scoring}))

		var ids []string
		for step := range rapid.IntRange(1, 25).Draw(rt, "steps") {
			switch rapid.IntRange(0, 9).Draw(rt, "action") {
			case 0: // reservations run out
				h.Now = h.Now.Add(10 * time.Minute)
				if _, err := h.Store.ExpireReservations(h.NextSeq(), h.Now); err != nil {
					rt.Fatalf("expire: %v", err)
				}
			case 1: // a workload goes away
				if len(ids) > 0 {
					id := ids[rapid.IntRange(0, len(ids)-1).Draw(rt, "victim")]
					if err := h.Store.DeleteWorkload(h.NextSeq(), id); err != nil {
						rt.Fatalf("delete: %v", err)
					}
				}
			default:
				b := placementtest.PyTorchJob("ns", fmt.Sprintf("job-%d", step))
				for comp := range rapid.IntRange(1, 3).Draw(rt, "components") {
					b.Component(fmt.Sprintf("c%d", comp), int64(rapid.IntRange(1, 4).Draw(rt, "pods")),
						res("cpu", fmt.Sprint(rapid.IntRange(0, 8).Draw(rt, "podCPU")),
							"nvidia.com/gpu", fmt.Sprint(rapid.IntRange(0, 4).Draw(rt, "podGPU"))))
				}
				id := h.AddWorkload(b.Obj(), nil)
				ids = append(ids, id)
				d := h.Place(id)
				if d.Status == structs.StatusPlaced {
					var pods int64
					for _, a := range d.Assignments {
						pods += a.Pods
					}
					if want := h.Store.Snapshot().Workload(id).Analysis.TotalPods; pods != want {
						rt.Fatalf("%s: packed %d pods, want %d", id, pods, want)
					}
				}
			}
			assertNoOvercommit(rt, h)
		}
	})
}

// TestSplitReplicasProperty: the shares always sum to the total, and each share is within one replica of its
// exact percentage.
func TestSplitReplicasProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(rt, "n")
		percentages := make([]int32, n)
		left := int32(100)
		for i := range n - 1 {
			percentages[i] = int32(rapid.IntRange(0, int(left)).Draw(rt, "pct"))
			left -= percentages[i]
		}
		percentages[n-1] = left
		total := int64(rapid.IntRange(0, 1000).Draw(rt, "total"))
		shares := scheduler.SplitReplicas(total, percentages)
		var sum int64
		for i, s := range shares {
			sum += s
			exact := float64(total) * float64(percentages[i]) / 100
			if float64(s) < exact-1 || float64(s) > exact+1 {
				rt.Fatalf("share %d = %d, exact %.2f", i, s, exact)
			}
		}
		if sum != total {
			rt.Fatalf("shares %v sum to %d, want %d", shares, sum, total)
		}
	})
}
