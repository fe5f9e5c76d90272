package placementbench

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Config sizes a run.
type Config struct {
	// FleetSize may have no workloads: BuildFleet builds the fleet alone.
	FleetSize
	Seed int64
	// PipelineMix replaces the mixed policies and workloads with those of the pipeline benchmark
	// (cmd/fleetflow/app/benchpipeline): one policy under which every workload fills the on-prem clusters
	// first and spills to the cloud ones, so once on-prem is full each cycle rejects half the fleet for
	// capacity, and its workload mix (see PipelineAnalyses).
	PipelineMix bool
	// CPUProfile, when set, is the file a CPU profile of the placement phase (not the fleet build) is written to.
	CPUProfile string
}

// DefaultConfig is the size the performance targets are stated for.
func DefaultConfig() Config {
	return Config{FleetSize: FleetSize{Clusters: 100, NodesPerCluster: 1000, Workloads: 20000, GPUNodePercent: 20}, Seed: 1}
}

func (c Config) validate() error { return c.Validate(0) }

// Fleet is a store loaded with a synthetic fleet, the scheduler that places on it (one for the whole run, as
// the placer has) and the planner that applies decisions to it.
type Fleet struct {
	Store     *state.Store
	Scheduler *scheduler.Scheduler
	Planner   *scheduler.StorePlanner
	seq       uint64
	now       time.Time
}

// NextSeq returns the next stream sequence.
func (f *Fleet) NextSeq() uint64 {
	f.seq++
	return f.seq
}

// The synthetic node shapes, shared with the pipeline benchmark so both measure the same fleet.
var (
	// GPUNodeAllocatable is a GPU node: 96 CPUs, 1 TiB, 8 GPUs.
	GPUNodeAllocatable = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("96"), corev1.ResourceMemory: resource.MustParse("1Ti"),
		corev1.ResourceEphemeralStorage: resource.MustParse("2Ti"), corev1.ResourcePods: resource.MustParse("110"),
		"nvidia.com/gpu": resource.MustParse("8")}
	// CPUNodeAllocatable is a CPU node: 64 CPUs, 256 GiB.
	CPUNodeAllocatable = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("500Gi"), corev1.ResourcePods: resource.MustParse("110")}
	// SystemRequested is what DaemonSets (CNI, node exporter, device plugin) already request on every node.
	SystemRequested = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi")}
	// GPUNodeTaints keep pods that do not tolerate GPUs off GPU nodes.
	GPUNodeTaints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
)

// BuildFleet loads the synthetic fleet: clusters labelled with a region (4 of them) and a provider (onprem for
// even clusters, cloud for odd), each with GPU nodes (tainted, 8 GPUs) and CPU nodes, every node with its own
// labels as real nodes have (hostname, zone, instance type), plus the benchmark's policies.
func BuildFleet(cfg Config) (*Fleet, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	store, err := state.NewStore(state.Config{})
	if err != nil {
		return nil, err
	}
	f := &Fleet{Store: store, Scheduler: scheduler.New(nil), now: time.Unix(1_700_000_000, 0)}
	var apis map[string]struct{}
	if cfg.PipelineMix {
		// The pipeline's clusters report their installed kinds, which the scheduler checks per cluster.
		if apis, err = servedAPIs(); err != nil {
			return nil, err
		}
	}
	f.Planner = &scheduler.StorePlanner{Store: store, NextSeq: f.NextSeq, Now: func() time.Time { return f.now }}
	gpuNodes := cfg.NodesPerCluster * cfg.GPUNodePercent / 100
	for c := range cfg.Clusters {
		name := fmt.Sprintf("cluster-%03d", c)
		provider := "onprem"
		if c%2 == 1 {
			provider = "cloud"
		}
		region := fmt.Sprintf("region-%d", c%4)
		if err := store.UpsertCluster(f.NextSeq(), &structs.Cluster{Name: name, Ready: true, APIs: apis,
			Labels: map[string]string{"provider": provider, "topology.kubernetes.io/region": region}}); err != nil {
			return nil, err
		}
		infos := make([]structs.NodeInfo, cfg.NodesPerCluster)
		for n := range cfg.NodesPerCluster {
			node := fmt.Sprintf("%s-node-%04d", name, n)
			info := structs.NodeInfo{Cluster: name, Name: node, Requested: SystemRequested}
			if n < gpuNodes {
				info.Labels = map[string]string{"kubernetes.io/hostname": node, "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
					"topology.kubernetes.io/zone": fmt.Sprintf("%s-%c", region, 'a'+n%3), "node.kubernetes.io/instance-type": "p5.48xlarge"}
				info.Taints = GPUNodeTaints
				info.Allocatable = GPUNodeAllocatable
			} else {
				info.Labels = map[string]string{"kubernetes.io/hostname": node,
					"topology.kubernetes.io/zone": fmt.Sprintf("%s-%c", region, 'a'+n%3), "node.kubernetes.io/instance-type": "m7i.16xlarge"}
				info.Allocatable = CPUNodeAllocatable
			}
			infos[n] = info
		}
		if err := store.UpsertNodes(f.NextSeq(), infos...); err != nil {
			return nil, err
		}
	}
	for _, p := range policies(cfg.PipelineMix) {
		compiled, err := policy.Compile(p, nil)
		if err != nil {
			return nil, err
		}
		if err := store.UpsertPolicy(f.NextSeq(), compiled); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// servedAPIs is what the pipeline benchmark's clusters report installed: core kinds and every built-in RI's kind.
func servedAPIs() (map[string]struct{}, error) {
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in ResourceInterfaces: %w", err)
	}
	apis := map[string]struct{}{}
	for _, key := range []string{"v1/Pod", "v1/Service", "v1/ConfigMap", "v1/Secret", "v1/Namespace", "batch/v1/Job"} {
		apis[key] = struct{}{}
	}
	for _, ri := range builtins {
		apis[structs.APIKey(ri.GVK.GroupVersion().String(), ri.GVK.Kind)] = struct{}{}
	}
	return apis, nil
}

func policies(fillAndSpill bool) []*v1alpha1.SchedulePolicy {
	named := func(name string, spec v1alpha1.SchedulePolicySpec) *v1alpha1.SchedulePolicy {
		p := &v1alpha1.SchedulePolicy{Spec: spec}
		p.Name = name
		return p
	}
	if fillAndSpill {
		return []*v1alpha1.SchedulePolicy{named("fill-onprem-then-cloud", v1alpha1.SchedulePolicySpec{
			OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"provider": "onprem"}}, {MatchLabels: map[string]string{"provider": "cloud"}}}}})}
	}
	return []*v1alpha1.SchedulePolicy{
		// Training fills on-prem clusters first and spills to the cloud.
		named("training", v1alpha1.SchedulePolicySpec{Priority: 10,
			ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{
				{Group: "kubeflow.org", Kind: "PyTorchJob"}, {Group: "kubeflow.org", Kind: "MPIJob"},
				{Group: "ray.io", Kind: "RayCluster"}, {Group: "jobset.x-k8s.io", Kind: "JobSet"}}},
			OrderedClusterSelector: &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
				{MatchLabels: map[string]string{"provider": "onprem"}}, {MatchLabels: map[string]string{"provider": "cloud"}}}}}),
		named("serving", v1alpha1.SchedulePolicySpec{Priority: 5, Scoring: v1alpha1.ScoringSpread,
			ResourceSelectors: v1alpha1.ResourceSelectors{Kinds: []v1alpha1.GroupKind{
				{Group: "apps", Kind: "Deployment"}, {Group: "apps", Kind: "StatefulSet"},
				{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}}}}),
		named("default", v1alpha1.SchedulePolicySpec{}),
	}
}
