package benchpipeline

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fleetflow/fleetflow/internal/placementbench"
)

// Config sizes a run.
type Config struct {
	// FleetSize's Workloads is how many workload events are published, at least one.
	placementbench.FleetSize
	// Rate is the offered load in workload events per second; 0 publishes as fast as JetStream takes them.
	Rate int
	Seed int64
	// RawMessages is how many messages the raw publish reference sends; 0 means max(Workloads, 100000), so
	// the reference runs long enough to be measured even for a tiny configuration.
	RawMessages int
	// DataDir holds the embedded JetStream's storage; empty uses a temporary directory removed afterwards.
	DataDir string
	// Timeout bounds the whole run.
	Timeout time.Duration
	// CPUProfile, when set, receives a CPU profile of the workload phase (from the first workload event
	// published to the last verdict stored), the part DecisionsPerSecond measures.
	CPUProfile io.Writer
	// HeapProfile, when set, receives a heap profile taken right after the workload phase (after a
	// collection, so it shows what stays live: the fleet view, the placer's bookkeeping, the server's caches).
	HeapProfile io.Writer
	// HeapProfileBefore, when set, receives a heap profile taken right before the workload phase, so that
	// `go tool pprof -sample_index=alloc_space -diff_base` over the two shows what the phase allocated.
	HeapProfileBefore io.Writer
	// BusFloor, when set, replaces the placer by a relay that places nothing and publishes for each workload
	// event what the placer's streams hold for a placed workload: FloorVerdictAndDecision or FloorDecision.
	BusFloor string
	// FloodNodeEvents, when set, adds a cluster that no policy selects, with NodesPerCluster nodes, and runs
	// the workload phase three times: before, during and after that cluster publishes this many node reports
	// a second, each changing a node's allocatable, round robin over its nodes. It needs a Rate. The profiles
	// are then of the flood phase.
	FloodNodeEvents int
	// NodeReportRate and NodeReportBurst bound each cluster's node reports in the placer
	// (placer.PlacerConfig); 0 keeps the placer's defaults, a negative rate sets no bound.
	NodeReportRate, NodeReportBurst float64
	// Log receives the placer's and the bus's logs; nil discards them.
	Log *slog.Logger
}

// DefaultConfig is the size the issue states the targets for.
func DefaultConfig() Config {
	return Config{FleetSize: placementbench.FleetSize{Clusters: 100, NodesPerCluster: 1000, Workloads: 10000, GPUNodePercent: 20},
		Seed: 1, Timeout: 30 * time.Minute}
}

func (c Config) validate() error {
	if err := c.Validate(1); err != nil {
		return err
	}
	switch {
	case c.Rate < 0:
		return fmt.Errorf("--rate %d: want 0 (as fast as possible) or more events per second", c.Rate)
	case c.RawMessages < 0:
		return fmt.Errorf("--raw-messages %d: want 0 (default) or more", c.RawMessages)
	case c.FloodNodeEvents < 0:
		return fmt.Errorf("--flood-node-events %d: want 0 (no flood) or more events per second", c.FloodNodeEvents)
	case c.FloodNodeEvents > 0 && c.Rate == 0:
		return fmt.Errorf("--flood-node-events %d: needs --rate, so the phases offer the same load", c.FloodNodeEvents)
	case c.FloodNodeEvents > 0 && c.BusFloor != "":
		return fmt.Errorf("--flood-node-events %d: the --bus-floor relay reads no node reports", c.FloodNodeEvents)
	case c.BusFloor != "" && c.BusFloor != FloorVerdictAndDecision && c.BusFloor != FloorDecision:
		return fmt.Errorf("--bus-floor %q: want %q (a verdict and a decision per workload) or %q (a decision alone)",
			c.BusFloor, FloorVerdictAndDecision, FloorDecision)
	}
	return nil
}
