package placementbench

import (
	"fmt"
	"math/rand/v2"

	"github.com/fleetflow/fleetflow/placement/karta"
)

// gpuPod is a pod spec asking for GPUs on the H100 nodes, tolerating their taint.
func gpuPod(cpu, memory string, gpus int) map[string]any {
	return map[string]any{"spec": map[string]any{
		"nodeSelector": map[string]any{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
		"tolerations":  []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"containers": []any{map[string]any{"name": "main", "image": "trainer", "resources": map[string]any{
			"requests": map[string]any{"cpu": cpu, "memory": memory, "nvidia.com/gpu": fmt.Sprint(gpus)},
			"limits":   map[string]any{"nvidia.com/gpu": fmt.Sprint(gpus)}}}}}}
}

func cpuPod(cpu, memory string) map[string]any {
	return map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"name": "main", "image": "app", "resources": map[string]any{
			"requests": map[string]any{"cpu": cpu, "memory": memory}}}}}}
}

func object(apiVersion, kind string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "shape", "namespace": "bench"}, "spec": spec}
}

// shapes returns CRs of the built-in kinds in a spread of sizes: GPU gangs (PyTorchJob, MPIJob, RayCluster,
// JobSet, LeaderWorkerSet) and CPU services (Deployment, StatefulSet).
func shapes(r *rand.Rand) []map[string]any {
	var out []map[string]any
	for range 8 {
		workers := 1 + r.IntN(4)
		gpus := []int{1, 2, 4, 8}[r.IntN(4)]
		out = append(out,
			object("kubeflow.org/v1", "PyTorchJob", map[string]any{"pytorchReplicaSpecs": map[string]any{
				"Master": map[string]any{"replicas": 1, "template": cpuPod("4", "16Gi")},
				"Worker": map[string]any{"replicas": workers, "template": gpuPod("16", "128Gi", gpus)}}}),
			object("kubeflow.org/v2beta1", "MPIJob", map[string]any{"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{"replicas": 1, "template": cpuPod("1", "2Gi")},
				"Worker":   map[string]any{"replicas": workers, "template": gpuPod("8", "64Gi", gpus)}}}),
			object("ray.io/v1", "RayCluster", map[string]any{
				"headGroupSpec":    map[string]any{"template": cpuPod("4", "16Gi")},
				"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": workers, "template": gpuPod("8", "64Gi", gpus)}}}),
			object("jobset.x-k8s.io/v1alpha2", "JobSet", map[string]any{"replicatedJobs": []any{
				map[string]any{"name": "workers", "replicas": workers, "template": map[string]any{"spec": map[string]any{
					"parallelism": 1, "completions": 1, "template": gpuPod("8", "64Gi", gpus)}}}}}),
			object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{"replicas": 1,
				"leaderWorkerTemplate": map[string]any{"size": 1 + workers, "workerTemplate": gpuPod("8", "64Gi", gpus)}}),
		)
		replicas := 1 + r.IntN(10)
		cpu := []string{"250m", "500m", "1", "2", "4"}[r.IntN(5)]
		out = append(out,
			object("apps/v1", "Deployment", map[string]any{"replicas": replicas, "template": cpuPod(cpu, "1Gi")}),
			object("apps/v1", "Deployment", map[string]any{"replicas": replicas * 2, "template": cpuPod("500m", "512Mi")}),
			object("apps/v1", "StatefulSet", map[string]any{"replicas": 1 + r.IntN(3), "template": cpuPod("2", "8Gi")}),
		)
	}
	return out
}

func (c Config) analyses() ([]*karta.Analysis, error) {
	if c.PipelineMix {
		return PipelineAnalyses(c.Workloads, c.Seed)
	}
	return Analyses(c.Workloads, c.Seed)
}

// Analyses returns n workload analyses cycling through the shapes, each under its own name. The built-in RIs
// analyze each shape once; a workload is a renamed copy, which is what an Analysis of an identical CR would be.
func Analyses(n int, seed int64) ([]*karta.Analysis, error) {
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in ResourceInterfaces: %w", err)
	}
	registry := karta.NewRegistry(builtins...)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	objs := shapes(r)
	analyzed := make([]*karta.Analysis, len(objs))
	for i, obj := range objs {
		gvk := karta.GVKOf(obj)
		ri, ok := registry.Lookup(gvk)
		if !ok {
			return nil, fmt.Errorf("no built-in ResourceInterface for %s", gvk)
		}
		a, err := ri.Analyze(obj)
		if err != nil {
			return nil, fmt.Errorf("analyze %s shape %d: %w", gvk.Kind, i, err)
		}
		analyzed[i] = a
	}
	out := make([]*karta.Analysis, n)
	for i := range n {
		a := *analyzed[r.IntN(len(analyzed))]
		a.Name = fmt.Sprintf("w-%06d", i)
		out[i] = &a
	}
	return out, nil
}

// pipelineShape draws one workload of the pipeline benchmark's mix (cmd/fleetflow/app/benchpipeline): the five
// GPU gang kinds and two CPU services with equal odds per draw, a PyTorchJob whose master needs GPUs too, and
// one GPU workload in a hundred asking 16 GPUs per pod, more than any node has. It returns the shape's
// parameters as a key, so identical shapes are analyzed once.
func pipelineShape(r *rand.Rand) (string, map[string]any) {
	workers := 1 + r.IntN(4)
	gpus := []int{1, 2, 4, 8}[r.IntN(4)]
	if r.IntN(100) == 0 {
		gpus = 16
	}
	kind := r.IntN(8)
	key := fmt.Sprintf("%d/%d/%d", kind, workers, gpus)
	switch kind {
	case 0:
		return key, object("kubeflow.org/v1", "PyTorchJob", map[string]any{"pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": 1, "template": gpuPod("16", "128Gi", gpus)},
			"Worker": map[string]any{"replicas": workers, "template": gpuPod("16", "128Gi", gpus)}}})
	case 1:
		return key, object("kubeflow.org/v2beta1", "MPIJob", map[string]any{"mpiReplicaSpecs": map[string]any{
			"Launcher": map[string]any{"replicas": 1, "template": cpuPod("1", "2Gi")},
			"Worker":   map[string]any{"replicas": workers, "template": gpuPod("8", "64Gi", gpus)}}})
	case 2:
		return key, object("jobset.x-k8s.io/v1alpha2", "JobSet", map[string]any{"replicatedJobs": []any{
			map[string]any{"name": "workers", "replicas": workers, "template": map[string]any{"spec": map[string]any{
				"parallelism": 1, "completions": 1, "template": gpuPod("8", "64Gi", gpus)}}}}})
	case 3:
		return key, object("ray.io/v1", "RayCluster", map[string]any{
			"headGroupSpec":    map[string]any{"template": cpuPod("4", "16Gi")},
			"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": workers, "template": gpuPod("8", "64Gi", gpus)}}})
	case 4:
		replicas := 1 + r.IntN(2)
		return fmt.Sprintf("%s/%d", key, replicas), object("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{
			"replicas": replicas, "leaderWorkerTemplate": map[string]any{"size": 1 + workers, "workerTemplate": gpuPod("8", "64Gi", gpus)}})
	case 5, 6:
		cpu := []string{"250m", "500m", "1", "2", "4"}[r.IntN(5)]
		replicas := 1 + r.IntN(10)
		return fmt.Sprintf("svc/%s/%d", cpu, replicas), object("apps/v1", "Deployment", map[string]any{
			"replicas": replicas, "template": cpuPod(cpu, "1Gi")})
	default:
		replicas := 1 + r.IntN(3)
		return fmt.Sprintf("db/%d", replicas), object("apps/v1", "StatefulSet", map[string]any{
			"replicas": replicas, "template": cpuPod("2", "8Gi")})
	}
}

// PipelineAnalyses returns n analyses of the pipeline benchmark's workload mix, each under its own name.
func PipelineAnalyses(n int, seed int64) ([]*karta.Analysis, error) {
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in ResourceInterfaces: %w", err)
	}
	registry := karta.NewRegistry(builtins...)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	analyzed := map[string]*karta.Analysis{}
	out := make([]*karta.Analysis, n)
	for i := range n {
		key, obj := pipelineShape(r)
		shape, ok := analyzed[key]
		if !ok {
			gvk := karta.GVKOf(obj)
			ri, found := registry.Lookup(gvk)
			if !found {
				return nil, fmt.Errorf("no built-in ResourceInterface for %s", gvk)
			}
			if shape, err = ri.Analyze(obj); err != nil {
				return nil, fmt.Errorf("analyze %s shape %s: %w", gvk.Kind, key, err)
			}
			analyzed[key] = shape
		}
		a := *shape
		a.Name = fmt.Sprintf("w-%06d", i)
		out[i] = &a
	}
	return out, nil
}
