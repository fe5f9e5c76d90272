package benchbinding

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
)

// GPUsPerNode is what every node of the bench's clusters has.
const GPUsPerNode = 8

// fleetSpec is the bench's fleet: clusters of 8-GPU nodes, each with a seed pod taking a random 0 to 7 of its
// GPUs, so that the free GPUs of a cluster are scattered over its nodes.
func fleetSpec(cfg *Config) *fleetspec.Fleet {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 1))
	spec := &fleetspec.Fleet{}
	for c := range cfg.Clusters {
		name := fmt.Sprintf("gpu-%d", c+1)
		cluster := fleetspec.Cluster{Name: name, Labels: map[string]string{"fleetflow.io/bench": "binding"}}
		for n := range cfg.NodesPerCluster {
			node := fleetspec.NodeGroup{
				Name: fmt.Sprintf("%s-node-%02d", name, n),
				Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
					corev1.ResourcePods: resource.MustParse("110"), gpuResource: *resource.NewQuantity(GPUsPerNode, resource.DecimalSI),
				},
			}
			if used := rng.IntN(GPUsPerNode); used > 0 {
				node.Requested = corev1.ResourceList{gpuResource: *resource.NewQuantity(int64(used), resource.DecimalSI)}
			}
			cluster.Nodes = append(cluster.Nodes, node)
		}
		spec.Clusters = append(spec.Clusters, cluster)
	}
	return spec
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// benchNamespace holds the gangs on the control plane and on the clusters.
const benchNamespace = "bench-binding"

// gangs draws the workloads to submit: 1 to MaxPods pods of 1 to MaxGPUs GPUs each, of the configured kinds in
// turn.
func gangs(cfg *Config) []gang {
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 2))
	out := make([]gang, cfg.Workloads)
	for i := range out {
		kind := kindNamed(cfg.Kinds[i%len(cfg.Kinds)])
		out[i] = gang{kind: kind, namespace: benchNamespace, name: kind.Name + "-" + strconv.Itoa(i),
			pods: 1 + rng.IntN(cfg.MaxPods), gpus: 1 + rng.IntN(cfg.MaxGPUs)}
	}
	return out
}

// freeGPUs is what the seed pods leave free over the fleet.
func freeGPUs(spec *fleetspec.Fleet) int {
	free := 0
	for _, c := range spec.Clusters {
		for _, n := range c.AllNodes() {
			used := n.Requested[gpuResource]
			free += GPUsPerNode - int(used.Value())
		}
	}
	return free
}
