package benchpipeline

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/placementbench"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestRunTinyFleet runs the whole pipeline on 2 clusters of 10 nodes with 50 workloads and checks that
// every workload got a verdict and that every figure the command prints was measured. The numbers
// themselves are not asserted: performance is reported by the command, not judged by a test.
func TestRunTinyFleet(t *testing.T) {
	cfg := Config{FleetSize: placementbench.FleetSize{Clusters: 2, NodesPerCluster: 10, Workloads: 50, GPUNodePercent: 20},
		Seed: 1, RawMessages: 2000, DataDir: t.TempDir(), Timeout: 2 * time.Minute}
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Placed + res.Unschedulable + res.Other; got != cfg.Workloads {
		t.Errorf("verdicts for %d workloads (placed %d, unschedulable %d, other %d), want %d",
			got, res.Placed, res.Unschedulable, res.Other, cfg.Workloads)
	}
	if res.Other != 0 {
		t.Errorf("%d workloads got NoPolicy or Invalid; the one policy selects every workload and every kind has a built-in RI", res.Other)
	}
	// Each cluster has 2 GPU nodes of 8 GPUs and 8 CPU nodes of 64 CPUs: the first workloads fit, and
	// 50 gangs and services cannot all fit on 4 GPU nodes, so both outcomes occur.
	if res.Placed == 0 || res.Unschedulable == 0 {
		t.Errorf("placed %d, unschedulable %d: want both outcomes on a fleet this small", res.Placed, res.Unschedulable)
	}
	// One Apply per placed workload (a single-cluster policy), none for the unschedulable ones.
	if res.Decisions < res.Placed {
		t.Errorf("%d decisions persisted for %d placed workloads", res.Decisions, res.Placed)
	}
	if wantFleet := 1 + len(teams) + cfg.Clusters*(3+cfg.NodesPerCluster); res.FleetEvents != wantFleet {
		t.Errorf("fleet events = %d, want %d (policy, namespaces, and per cluster: object, APIs, heartbeat, nodes)", res.FleetEvents, wantFleet)
	}
	for name, v := range map[string]float64{
		"decisionsPerSecond": res.DecisionsPerSecond, "p50Ms": res.P50Ms, "p99Ms": res.P99Ms,
		"rawPublishPerSecond": res.RawPublishPerSecond, "ratio": res.Ratio, "decisionP50Ms": res.DecisionP50Ms,
		"offeredPerSecond": res.OfferedPerSecond, "eventBytes": float64(res.EventBytes), "verdictBytes": float64(res.VerdictBytes),
		"rawPublishTCPPerSecond": res.RawPublishTCPPerSecond, "rawPublishInProcessPerSecond": res.RawPublishInProcessPerSecond,
	} {
		if !(v > 0) {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	if res.P50Ms > res.P99Ms || res.P99Ms > res.MaxMs {
		t.Errorf("percentiles out of order: p50 %v, p99 %v, max %v", res.P50Ms, res.P99Ms, res.MaxMs)
	}
	if res.RawPublishPerSecond != max(res.RawPublishTCPPerSecond, res.RawPublishInProcessPerSecond) {
		t.Errorf("raw publish reference %v is not the faster of tcp %v and in process %v",
			res.RawPublishPerSecond, res.RawPublishTCPPerSecond, res.RawPublishInProcessPerSecond)
	}
	if res.RawMessages != cfg.RawMessages {
		t.Errorf("raw messages = %d, want %d", res.RawMessages, cfg.RawMessages)
	}
}

// TestBusFloorRelaysEveryWorkload: with a relay in the placer's place, every workload gets the messages the
// floor names, a verdict counts only where one is published, and the figures are measured as usual.
func TestBusFloorRelaysEveryWorkload(t *testing.T) {
	for _, floor := range []string{FloorVerdictAndDecision, FloorDecision} {
		t.Run(floor, func(t *testing.T) {
			cfg := Config{FleetSize: placementbench.FleetSize{Clusters: 2, NodesPerCluster: 10, Workloads: 30, GPUNodePercent: 20},
				Seed: 1, RawMessages: 1000, DataDir: t.TempDir(), Timeout: 2 * time.Minute, BusFloor: floor}
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.BusFloor != floor {
				t.Errorf("result names bus floor %q, want %q", res.BusFloor, floor)
			}
			if res.Placed != cfg.Workloads || res.Decisions != cfg.Workloads {
				t.Errorf("placed %d with %d decisions, want every one of %d workloads relayed once", res.Placed, res.Decisions, cfg.Workloads)
			}
			if published := res.VerdictBytes > 0; published != (floor == FloorVerdictAndDecision) {
				t.Errorf("verdicts read back: %v (%d B each), want them only for the %q floor", published, res.VerdictBytes, FloorVerdictAndDecision)
			}
			if !(res.DecisionsPerSecond > 0 && res.Ratio > 0 && res.P99Ms > 0) {
				t.Errorf("decisions/s %v, ratio %v, p99 %v: want all measured", res.DecisionsPerSecond, res.Ratio, res.P99Ms)
			}
		})
	}
}

// TestFloodPhases: a run with a flood measures three phases of the same workloads, the node reports only in the
// second, and every workload of each phase gets a verdict.
func TestFloodPhases(t *testing.T) {
	cfg := Config{FleetSize: placementbench.FleetSize{Clusters: 2, NodesPerCluster: 10, Workloads: 40, GPUNodePercent: 20},
		Seed: 1, Rate: 200, FloodNodeEvents: 500, RawMessages: 1000, DataDir: t.TempDir(), Timeout: 2 * time.Minute}
	res, err := Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if wantFleet := 1 + len(teams) + (cfg.Clusters+1)*(3+cfg.NodesPerCluster); res.FleetEvents != wantFleet {
		t.Errorf("fleet events = %d, want %d (the flooding cluster too)", res.FleetEvents, wantFleet)
	}
	if len(res.Phases) != 3 {
		t.Fatalf("%d phases, want before, flood, after: %+v", len(res.Phases), res.Phases)
	}
	for i, name := range []string{PhaseBefore, PhaseFlood, PhaseAfter} {
		p := res.Phases[i]
		if p.Name != name {
			t.Errorf("phase %d is %q, want %q", i, p.Name, name)
		}
		if got := p.Placed + p.Unschedulable; got != cfg.Workloads {
			t.Errorf("phase %s: verdicts for %d workloads, want %d", name, got, cfg.Workloads)
		}
		if flooded := p.NodeEvents > 0 && p.NodeEventsPerSecond > 0; flooded != (name == PhaseFlood) {
			t.Errorf("phase %s: %d node reports at %v/s, want them in the flood phase only", name, p.NodeEvents, p.NodeEventsPerSecond)
		}
		if !(p.DecisionsPerSecond > 0 && p.P99Ms > 0 && p.StoredBytesPerSecond > 0 && p.Seconds > 0) {
			t.Errorf("phase %s: decisions/s %v, p99 %v, stored B/s %v, seconds %v: want all measured", name,
				p.DecisionsPerSecond, p.P99Ms, p.StoredBytesPerSecond, p.Seconds)
		}
	}
	if first := res.Phases[0]; res.P99Ms != first.P99Ms || res.Placed != first.Placed {
		t.Errorf("result p99 %v, placed %d; want the first phase's, %v and %d", res.P99Ms, res.Placed, first.P99Ms, first.Placed)
	}
}

func TestConfigRejectsBadSizes(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		flag string // the command-line flag the error names
	}{
		{"no clusters", func(c *Config) { c.Clusters = 0 }, "--clusters 0"},
		{"no nodes", func(c *Config) { c.NodesPerCluster = 0 }, "--nodes-per-cluster 0"},
		{"no workloads", func(c *Config) { c.Workloads = 0 }, "--workloads 0"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "--rate -1"},
		{"GPU share over 100", func(c *Config) { c.GPUNodePercent = 101 }, "--gpu-node-percent 101"},
		{"negative raw messages", func(c *Config) { c.RawMessages = -1 }, "--raw-messages -1"},
		{"unknown bus floor", func(c *Config) { c.BusFloor = "verdicts" }, `--bus-floor "verdicts"`},
		{"negative flood", func(c *Config) { c.FloodNodeEvents = -1 }, "--flood-node-events -1"},
		{"flood without a rate", func(c *Config) { c.FloodNodeEvents = 100 }, "--flood-node-events 100: needs --rate"},
		{"flood with a bus floor", func(c *Config) { c.FloodNodeEvents, c.Rate, c.BusFloor = 100, 10, FloorDecision },
			"--flood-node-events 100: the --bus-floor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.edit(&cfg)
			if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), tc.flag) {
				t.Errorf("Run(%+v) = %v, want an error naming %s", cfg, err, tc.flag)
			}
		})
	}
}

// TestVerdictStatus: the watcher's shortcut reads the status the placer wrote, whatever the reasons say.
func TestVerdictStatus(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "status", Name: "status", UID: "status"}
	for _, v := range []*schemas.PlacementVerdict{
		{Workload: ref, Sequence: 1, Status: schemas.VerdictPlaced, Clusters: []string{"a"}},
		{Workload: ref, Sequence: 2, Status: schemas.VerdictUnschedulable, Message: `"status":"Placed"`,
			Reasons: map[string]string{"b": `"status":"Placed"`}},
	} {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := verdictStatus(data); err != nil || got != v.Status {
			t.Errorf("verdictStatus(%s) = %q, %v; want %q", data, got, err, v.Status)
		}
	}
}
