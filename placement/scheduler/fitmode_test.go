package scheduler_test

import (
	"slices"
	"testing"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// A fragmented cluster (16 GPUs free, 2 on each of 8 nodes) fits an 8-GPU pod when free resources are summed
// per cluster, as Karmada's general estimator sums them, and not when the pod must fit one node.
func TestFitModes(t *testing.T) {
	tests := []struct {
		name        string
		mode        scheduler.FitMode
		pods        int64
		gpus        string
		wantStatus  structs.DecisionStatus
		wantReason  string
		assignments int
	}{
		{"nodes: 8-GPU pod on 2 free per node", scheduler.FitNodes, 1, "8", structs.StatusUnschedulable,
			"pod worker (nvidia.com/gpu 8) fits no node: largest free 2 on frag-0", 0},
		{"default is nodes", "", 1, "8", structs.StatusUnschedulable,
			"pod worker (nvidia.com/gpu 8) fits no node: largest free 2 on frag-0", 0},
		{"summed: 8-GPU pod on 16 free in total", scheduler.FitSummed, 1, "8", structs.StatusPlaced, "", 0},
		{"summed: 2 of 8 GPUs each, which the nodes take too", scheduler.FitSummed, 4, "2", structs.StatusPlaced, "", 4},
		{"nodes: 2 of 8 GPUs each", scheduler.FitNodes, 4, "2", structs.StatusPlaced, "", 4},
		{"summed: more than the cluster has free", scheduler.FitSummed, 3, "8", structs.StatusUnschedulable,
			"needs nvidia.com/gpu 24 in total, 16 free", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.Scheduler = h.Scheduler.WithFit(tt.mode)
			h.AddCluster("frag")
			h.AddNodes("frag", gpuNodes("frag", 8, "8", "6"))
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			id := h.AddWorkload(placementtest.PyTorchJob("team-a", "train").
				Component("worker", tt.pods, res("nvidia.com/gpu", tt.gpus)).Obj(), nil)

			d := h.Place(id)
			if d.Status != tt.wantStatus {
				t.Fatalf("decision = %s on %v (reasons %v), want %s", d.Status, d.Clusters, d.Reasons, tt.wantStatus)
			}
			if tt.wantStatus == structs.StatusPlaced && !slices.Equal(d.Clusters, []string{"frag"}) {
				t.Errorf("clusters = %v, want [frag]", d.Clusters)
			}
			if got := d.Reasons["frag"]; got != tt.wantReason {
				t.Errorf("reason = %q, want %q", got, tt.wantReason)
			}
			if len(d.Assignments) != tt.assignments {
				t.Errorf("assignments = %+v, want %d", d.Assignments, tt.assignments)
			}
		})
	}
}

func TestParseFitMode(t *testing.T) {
	tests := []struct {
		in      string
		want    scheduler.FitMode
		wantErr bool
	}{
		{"", scheduler.FitNodes, false},
		{"nodes", scheduler.FitNodes, false},
		{"summed", scheduler.FitSummed, false},
		{"Summed", "", true},
	}
	for _, tt := range tests {
		got, err := scheduler.ParseFitMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseFitMode(%q) = %q, %v; want %q (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
