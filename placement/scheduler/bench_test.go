package scheduler_test

import (
	"fmt"
	"testing"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// BenchmarkSchedule measures one placement cycle (no plan submission) for a 4-worker GPU gang on fleets of
// growing size, half the GPUs already in use so packing has to look past busy nodes.
func BenchmarkSchedule(b *testing.B) {
	for _, size := range []struct{ clusters, nodes int }{{10, 100}, {100, 1000}} {
		b.Run(fmt.Sprintf("clusters=%d/nodes=%d", size.clusters, size.nodes), func(b *testing.B) {
			h := placementtest.NewHarness(b)
			for c := range size.clusters {
				name := fmt.Sprintf("c%03d", c)
				h.AddCluster(name)
				h.AddNodes(name, placementtest.NodeSpec{Prefix: "gpu", Count: size.nodes / 5,
					Allocatable: res("cpu", "96", "memory", "1Ti", "nvidia.com/gpu", "8"), Requested: res("nvidia.com/gpu", "4")})
				h.AddNodes(name, placementtest.NodeSpec{Prefix: "cpu", Count: size.nodes - size.nodes/5,
					Allocatable: res("cpu", "64", "memory", "256Gi")})
			}
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			id := h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("master", 1, res("cpu", "4")).
				Component("worker", 4, res("cpu", "16", "nvidia.com/gpu", "4")).Obj(), nil)
			snap := h.Store.Snapshot()
			for b.Loop() {
				plan, err := h.Scheduler.Schedule(snap, id)
				if err != nil {
					b.Fatal(err)
				}
				if plan.Decisions[0].Status != structs.StatusPlaced {
					b.Fatalf("not placed: %v", plan.Decisions[0].Reasons)
				}
			}
		})
	}
}
