package replaybench

import (
	"fmt"
	"time"

	"github.com/fleetflow/fleetflow/internal/placementbench"
)

// Config sizes a run.
type Config struct {
	// FleetSize's Workloads is how many workloads are submitted (one workload.changed event each), at least one.
	placementbench.FleetSize
	// Lifetime is how many later submissions a workload lives for before it is deleted, as a finished job
	// is; 0 keeps every workload. It keeps a long history from merely filling the fleet and turning every
	// later workload away.
	Lifetime int
	Seed     int64
	// Step is how far the history's clock moves per input a producer, an applier or the control plane sends;
	// heartbeats and ticks come at their intervals of that clock.
	Step time.Duration
	// CPUProfile, when set, is the file a CPU profile of the replay (not the synthesis) is written to.
	CPUProfile string
}

// DefaultConfig is the size the issue states the target for.
func DefaultConfig() Config {
	return Config{FleetSize: placementbench.FleetSize{Clusters: 100, NodesPerCluster: 1000, Workloads: 100_000, GPUNodePercent: 20},
		Lifetime: 10_000, Seed: 1, Step: time.Millisecond}
}

func (c Config) validate() error {
	if err := c.Validate(1); err != nil {
		return err
	}
	switch {
	case c.Lifetime < 0:
		return fmt.Errorf("--lifetime %d: want 0 (workloads stay) or more", c.Lifetime)
	case c.Step <= 0:
		return fmt.Errorf("step %s: want more than 0", c.Step)
	}
	return nil
}
