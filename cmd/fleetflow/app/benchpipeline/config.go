package benchpipeline

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Config sizes a run.
type Config struct {
	Clusters        int
	NodesPerCluster int
	Workloads       int
	// Rate is the offered load in workload events per second; 0 publishes as fast as JetStream takes them.
	Rate int
	// GPUNodePercent is the share of each cluster's nodes that carry 8 GPUs; the rest are CPU nodes.
	GPUNodePercent int
	Seed           int64
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
	// Log receives the placer's and the bus's logs; nil discards them.
	Log *slog.Logger
}

// DefaultConfig is the size the issue states the targets for.
func DefaultConfig() Config {
	return Config{Clusters: 100, NodesPerCluster: 1000, Workloads: 10000, GPUNodePercent: 20, Seed: 1, Timeout: 30 * time.Minute}
}

func (c Config) validate() error {
	switch {
	case c.Clusters < 1:
		return fmt.Errorf("--clusters %d: want at least 1", c.Clusters)
	case c.NodesPerCluster < 1:
		return fmt.Errorf("--nodes-per-cluster %d: want at least 1", c.NodesPerCluster)
	case c.Workloads < 1:
		return fmt.Errorf("--workloads %d: want at least 1", c.Workloads)
	case c.Rate < 0:
		return fmt.Errorf("--rate %d: want 0 (as fast as possible) or more events per second", c.Rate)
	case c.GPUNodePercent < 0 || c.GPUNodePercent > 100:
		return fmt.Errorf("--gpu-node-percent %d: want 0..100", c.GPUNodePercent)
	case c.RawMessages < 0:
		return fmt.Errorf("--raw-messages %d: want 0 (default) or more", c.RawMessages)
	case c.BusFloor != "" && c.BusFloor != FloorVerdictAndDecision && c.BusFloor != FloorDecision:
		return fmt.Errorf("--bus-floor %q: want %q (a verdict and a decision per workload) or %q (a decision alone)",
			c.BusFloor, FloorVerdictAndDecision, FloorDecision)
	}
	return nil
}
