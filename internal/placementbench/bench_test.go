package placementbench

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// TestRunSmall checks a small run end to end: every workload gets a decision, something is placed, and the fleet
// view reports a plausible size.
func TestRunSmall(t *testing.T) {
	res, err := Run(Config{FleetSize: FleetSize{Clusters: 4, NodesPerCluster: 50, Workloads: 300, GPUNodePercent: 20}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Placed+res.Unschedulable+res.NoPolicy != 300 {
		t.Errorf("decisions %d+%d+%d, want 300", res.Placed, res.Unschedulable, res.NoPolicy)
	}
	if res.Placed == 0 || res.NoPolicy != 0 {
		t.Errorf("placed %d, no policy %d: want some placed and every kind covered by a policy", res.Placed, res.NoPolicy)
	}
	if res.BytesPerNode <= 0 {
		t.Errorf("bytes per node = %v", res.BytesPerNode)
	}
}

// TestConfigErrorsNameTheFlag: a bad setting is refused before any fleet is built, by the flag a user typed.
func TestConfigErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		flag string
	}{
		{func(c *Config) { c.Clusters = 0 }, "--clusters 0"},
		{func(c *Config) { c.NodesPerCluster = -3 }, "--nodes-per-cluster -3"},
		{func(c *Config) { c.Workloads = -1 }, "--workloads -1"},
		{func(c *Config) { c.GPUNodePercent = 120 }, "--gpu-node-percent 120"},
	} {
		cfg := DefaultConfig()
		tc.edit(&cfg)
		if _, err := Run(cfg); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("Run(%+v) = %v, want an error naming %s", cfg, err, tc.flag)
		}
	}
}

// TestBytesPerNode: a heap that shrank while a tiny fleet was built (bench placement --clusters 2
// --nodes-per-cluster 10) reports 0 bytes per node, not an unsigned wrap-around.
func TestBytesPerNode(t *testing.T) {
	tests := []struct {
		name          string
		before, after uint64
		nodes         int
		want          float64
	}{
		{"grew", 1000, 3000, 10, 200},
		{"unchanged", 1000, 1000, 10, 0},
		{"shrank", 3000, 1000, 10, 0},
		{"no nodes", 1000, 3000, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bytesPerNode(tt.before, tt.after, tt.nodes); got != tt.want {
				t.Errorf("bytesPerNode(%d, %d, %d) = %v, want %v", tt.before, tt.after, tt.nodes, got, tt.want)
			}
		})
	}
}

// BenchmarkPlacement places workloads one at a time on a loaded fleet; each op is one decision (upsert,
// cycle, reserve). The fleet is rebuilt whenever it fills up, outside the timer.
func BenchmarkPlacement(b *testing.B) {
	for _, size := range []struct{ clusters, nodes int }{{10, 100}, {100, 1000}} {
		b.Run(fmt.Sprintf("clusters=%d/nodes=%d", size.clusters, size.nodes), func(b *testing.B) {
			cfg := Config{FleetSize: FleetSize{Clusters: size.clusters, NodesPerCluster: size.nodes, Workloads: 20000, GPUNodePercent: 20},
				Seed: 1}
			analyses, err := Analyses(cfg.Workloads, cfg.Seed)
			if err != nil {
				b.Fatal(err)
			}
			res := placeOneAtATime(b, cfg, analyses)
			if res.Placed == 0 {
				b.Fatal("nothing placed")
			}
			b.ReportMetric(float64(res.Placed)/float64(res.Placed+res.Unschedulable), "placed/op")
		})
	}
}

// BenchmarkFleetMemory reports the live heap per node of a loaded fleet view.
func BenchmarkFleetMemory(b *testing.B) {
	cfg := Config{FleetSize: FleetSize{Clusters: 100, NodesPerCluster: 1000, GPUNodePercent: 20}}
	for b.Loop() {
		before := liveHeap()
		fleet, err := BuildFleet(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(liveHeap()-before)/float64(cfg.Clusters*cfg.NodesPerCluster), "bytes/node")
		_ = fleet.Store.Snapshot()
	}
}

// TestRunDefault runs the full-size benchmark of `fleetflow bench placement` when FLEETFLOW_BENCH=1, so the
// numbers can be reproduced without the binary.
func TestRunDefault(t *testing.T) {
	if os.Getenv("FLEETFLOW_BENCH") != "1" {
		t.Skip("set FLEETFLOW_BENCH=1 to run the full-size placement benchmark")
	}
	res, err := Run(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res)
	t.Logf("%s", out)
	if res.Placed == 0 {
		t.Error("nothing placed")
	}
}

// BenchmarkPipelineMixCycle measures one placement cycle (no plan submission) of the pipeline benchmark's mix on
// its fleet once 10,000 workloads fill the on-prem clusters, the state in which every cycle rejects the full
// on-prem tier before packing onto a cloud cluster.
func BenchmarkPipelineMixCycle(b *testing.B) {
	cfg := Config{FleetSize: FleetSize{Clusters: 100, NodesPerCluster: 1000, Workloads: 10000, GPUNodePercent: 20},
		Seed: 1, PipelineMix: true}
	fleet, err := BuildFleet(cfg)
	if err != nil {
		b.Fatal(err)
	}
	analyses, err := PipelineAnalyses(cfg.Workloads+1000, cfg.Seed)
	if err != nil {
		b.Fatal(err)
	}
	if err := fleet.Place(analyses[:cfg.Workloads], &Result{}); err != nil {
		b.Fatal(err)
	}
	var ids []string
	for _, a := range analyses[cfg.Workloads:] {
		wl, err := fleet.Store.UpsertWorkload(fleet.NextSeq(), structs.WorkloadInfo{Analysis: a, Generation: 1})
		if err != nil {
			b.Fatal(err)
		}
		ids = append(ids, wl.ID)
	}
	snap := fleet.Store.Snapshot()
	sched := fleet.Scheduler
	i := 0
	for b.Loop() {
		if _, err := sched.Schedule(snap, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPipelineMixDecision measures whole decisions (upsert, cycle, apply) of the pipeline benchmark's mix,
// from an empty fleet on: each op is one decision, and the fleet is rebuilt outside the timer after 10,000.
func BenchmarkPipelineMixDecision(b *testing.B) {
	cfg := Config{FleetSize: FleetSize{Clusters: 100, NodesPerCluster: 1000, Workloads: 10000, GPUNodePercent: 20},
		Seed: 1, PipelineMix: true}
	analyses, err := PipelineAnalyses(cfg.Workloads, cfg.Seed)
	if err != nil {
		b.Fatal(err)
	}
	placeOneAtATime(b, cfg, analyses)
}

// placeOneAtATime builds the fleet and places the analyses one per op (upsert, cycle, apply), rebuilding the
// fleet outside the timer once every analysis has been placed. It returns the tally of the decisions.
func placeOneAtATime(b *testing.B, cfg Config, analyses []*karta.Analysis) *Result {
	b.Helper()
	fleet, err := BuildFleet(cfg)
	if err != nil {
		b.Fatal(err)
	}
	res := &Result{}
	i := 0
	b.ResetTimer()
	for b.Loop() {
		if i == len(analyses) {
			b.StopTimer()
			if fleet, err = BuildFleet(cfg); err != nil {
				b.Fatal(err)
			}
			i = 0
			b.StartTimer()
		}
		if err := fleet.Place(analyses[i:i+1], res); err != nil {
			b.Fatal(err)
		}
		i++
	}
	return res
}

// TestPipelineMixServesEveryKind: under PipelineMix every cluster reports its installed kinds, as the pipeline's
// do, and those include every kind of the mix, so no workload is filtered out for its API.
func TestPipelineMixServesEveryKind(t *testing.T) {
	res, err := Run(Config{FleetSize: FleetSize{Clusters: 4, NodesPerCluster: 20, Workloads: 200, GPUNodePercent: 20},
		Seed: 3, PipelineMix: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Placed+res.Unschedulable != 200 || res.Placed == 0 {
		t.Errorf("placed %d, unschedulable %d of 200: want every workload decided and some placed", res.Placed, res.Unschedulable)
	}
	fleet, err := BuildFleet(Config{FleetSize: FleetSize{Clusters: 2, NodesPerCluster: 1}, PipelineMix: true})
	if err != nil {
		t.Fatal(err)
	}
	analyses, err := PipelineAnalyses(500, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range fleet.Store.Snapshot().Clusters() {
		for _, a := range analyses {
			if key := structs.APIKey(a.APIVersion, a.Kind); !c.ServesAPI(key) || c.APIs == nil {
				t.Fatalf("cluster %s does not list %s among its installed kinds", c.Name, key)
			}
		}
	}
}
