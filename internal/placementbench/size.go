package placementbench

import "fmt"

// FleetSize is how large a benchmark's synthetic fleet is and how many workloads it sends: what the flags
// --clusters, --nodes-per-cluster, --workloads and --gpu-node-percent of the bench commands set. Each
// benchmark's Config embeds it.
type FleetSize struct {
	Clusters        int
	NodesPerCluster int
	Workloads       int
	// GPUNodePercent is the share of each cluster's nodes that carry 8 GPUs; the rest are CPU nodes.
	GPUNodePercent int
}

// Validate refuses a size no fleet can be built for, or fewer than minWorkloads workloads (0 for a benchmark
// that may build the fleet alone). Its errors name the flag a user typed and what it wants.
func (s FleetSize) Validate(minWorkloads int) error {
	switch {
	case s.Clusters < 1:
		return fmt.Errorf("--clusters %d: want at least 1", s.Clusters)
	case s.NodesPerCluster < 1:
		return fmt.Errorf("--nodes-per-cluster %d: want at least 1", s.NodesPerCluster)
	case s.Workloads < minWorkloads:
		return fmt.Errorf("--workloads %d: want at least %d", s.Workloads, minWorkloads)
	case s.GPUNodePercent < 0 || s.GPUNodePercent > 100:
		return fmt.Errorf("--gpu-node-percent %d: want 0..100", s.GPUNodePercent)
	}
	return nil
}
