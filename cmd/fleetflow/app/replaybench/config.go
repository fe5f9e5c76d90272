package replaybench

import (
	"fmt"
	"time"
)

// Config sizes a run.
type Config struct {
	Clusters        int
	NodesPerCluster int
	// Workloads is how many workloads are submitted (one workload.changed event each).
	Workloads int
	// Lifetime is how many later submissions a workload lives for before it is deleted, as a finished job
	// is; 0 keeps every workload. It keeps a long history from merely filling the fleet and turning every
	// later workload away.
	Lifetime int
	// GPUNodePercent is the share of each cluster's nodes that carry 8 GPUs; the rest are CPU nodes.
	GPUNodePercent int
	Seed           int64
	// Step is how far the history's clock moves per input a producer, an applier or the control plane sends;
	// heartbeats and ticks come at their intervals of that clock.
	Step time.Duration
	// CPUProfile, when set, is the file a CPU profile of the replay (not the synthesis) is written to.
	CPUProfile string
}

// DefaultConfig is the size the issue states the target for.
func DefaultConfig() Config {
	return Config{Clusters: 100, NodesPerCluster: 1000, Workloads: 100_000, Lifetime: 10_000, GPUNodePercent: 20, Seed: 1,
		Step: time.Millisecond}
}

func (c Config) validate() error {
	switch {
	case c.Clusters < 1:
		return fmt.Errorf("--clusters %d: want at least 1", c.Clusters)
	case c.NodesPerCluster < 1:
		return fmt.Errorf("--nodes-per-cluster %d: want at least 1", c.NodesPerCluster)
	case c.Workloads < 1:
		return fmt.Errorf("--workloads %d: want at least 1", c.Workloads)
	case c.Lifetime < 0:
		return fmt.Errorf("--lifetime %d: want 0 (workloads stay) or more", c.Lifetime)
	case c.GPUNodePercent < 0 || c.GPUNodePercent > 100:
		return fmt.Errorf("--gpu-node-percent %d: want 0..100", c.GPUNodePercent)
	case c.Step <= 0:
		return fmt.Errorf("step %s: want more than 0", c.Step)
	}
	return nil
}
