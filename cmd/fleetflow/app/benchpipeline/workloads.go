package benchpipeline

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// The workload mix: framework CRs of the built-in kinds as a user would write them. GPU gangs (PyTorchJob,
// MPIJob, JobSet, RayCluster, LeaderWorkerSet) ask for H100s and tolerate the GPU nodes' taint; services
// (Deployment, StatefulSet) ask for CPU only. A small share asks for more GPUs per pod than any node has,
// so the unschedulable path, with a reason per cluster, is part of the measurement too.

func gpuPodTemplate(image, cpu, memory string, gpus int) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/component": "worker"}},
		"spec": map[string]any{
			"nodeSelector": map[string]any{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
			"tolerations":  []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
			"containers": []any{map[string]any{
				"name": "trainer", "image": image,
				"command": []any{"torchrun", "--nnodes=$(WORLD_SIZE)", "train.py"},
				"env":     []any{map[string]any{"name": "NCCL_DEBUG", "value": "WARN"}},
				"resources": map[string]any{
					"requests": map[string]any{"cpu": cpu, "memory": memory, "nvidia.com/gpu": strconv.Itoa(gpus)},
					"limits":   map[string]any{"nvidia.com/gpu": strconv.Itoa(gpus)}},
				"volumeMounts": []any{map[string]any{"name": "dshm", "mountPath": "/dev/shm"}},
			}},
			"volumes": []any{map[string]any{"name": "dshm", "emptyDir": map[string]any{"medium": "Memory"}}},
		}}
}

func cpuPodTemplate(image, cpu, memory string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "svc"}},
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "app", "image": image,
			"ports": []any{map[string]any{"containerPort": 8080, "name": "http"}},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": cpu, "memory": memory},
				"limits":   map[string]any{"memory": memory}},
		}}}}
}

// workloadSpec returns apiVersion, kind and spec of the i-th workload of the mix.
func workloadSpec(r *rand.Rand) (apiVersion, kind string, spec map[string]any) {
	workers := 1 + r.IntN(4)
	gpus := []int{1, 2, 4, 8}[r.IntN(4)]
	if r.IntN(100) == 0 {
		gpus = 16 // no node has 16 GPUs: unschedulable everywhere
	}
	image := "nvcr.io/nvidia/pytorch:25.01-py3"
	switch r.IntN(8) {
	case 0:
		return "kubeflow.org/v1", "PyTorchJob", map[string]any{
			"runPolicy": map[string]any{"cleanPodPolicy": "None"},
			"pytorchReplicaSpecs": map[string]any{
				"Master": map[string]any{"replicas": 1, "restartPolicy": "OnFailure", "template": gpuPodTemplate(image, "16", "128Gi", gpus)},
				"Worker": map[string]any{"replicas": workers, "restartPolicy": "OnFailure", "template": gpuPodTemplate(image, "16", "128Gi", gpus)}}}
	case 1:
		return "kubeflow.org/v2beta1", "MPIJob", map[string]any{
			"slotsPerWorker": gpus,
			"mpiReplicaSpecs": map[string]any{
				"Launcher": map[string]any{"replicas": 1, "template": cpuPodTemplate("mpioperator/mpi-pi", "1", "2Gi")},
				"Worker":   map[string]any{"replicas": workers, "template": gpuPodTemplate(image, "8", "64Gi", gpus)}}}
	case 2:
		return "jobset.x-k8s.io/v1alpha2", "JobSet", map[string]any{
			"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": workers, "template": map[string]any{
				"spec": map[string]any{"parallelism": 1, "completions": 1, "backoffLimit": 0,
					"template": gpuPodTemplate(image, "8", "64Gi", gpus)}}}}}
	case 3:
		return "ray.io/v1", "RayCluster", map[string]any{
			"rayVersion":    "2.41.0",
			"headGroupSpec": map[string]any{"rayStartParams": map[string]any{"dashboard-host": "0.0.0.0"}, "template": cpuPodTemplate("rayproject/ray:2.41.0", "4", "16Gi")},
			"workerGroupSpecs": []any{map[string]any{"groupName": "gpu", "replicas": workers, "minReplicas": 1, "maxReplicas": 8,
				"rayStartParams": map[string]any{}, "template": gpuPodTemplate("rayproject/ray:2.41.0-gpu", "8", "64Gi", gpus)}}}
	case 4:
		return "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", map[string]any{
			"replicas": 1 + r.IntN(2),
			"leaderWorkerTemplate": map[string]any{"size": 1 + workers, "restartPolicy": "RecreateGroupOnPodRestart",
				"workerTemplate": gpuPodTemplate("vllm/vllm-openai:v0.7.2", "8", "64Gi", gpus)}}
	case 5, 6:
		cpu := []string{"250m", "500m", "1", "2", "4"}[r.IntN(5)]
		return "apps/v1", "Deployment", map[string]any{
			"replicas": 1 + r.IntN(10),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "svc"}},
			"template": cpuPodTemplate("ghcr.io/example/api:1.4.2", cpu, "1Gi")}
	default:
		return "apps/v1", "StatefulSet", map[string]any{
			"replicas": 1 + r.IntN(3), "serviceName": "db",
			"selector": map[string]any{"matchLabels": map[string]any{"app": "svc"}},
			"template": cpuPodTemplate("postgres:17", "2", "8Gi")}
	}
}

// teams are the namespaces workloads are submitted in.
var teams = []string{"team-vision", "team-llm", "team-speech", "team-recsys"}

// workloadObject is the i-th control-plane workload, with the metadata an apiserver would have set.
func workloadObject(i int, r *rand.Rand, created time.Time) map[string]any {
	apiVersion, kind, spec := workloadSpec(r)
	team := teams[i%len(teams)]
	return map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{
			"name":              fmt.Sprintf("bench-%06d", i),
			"namespace":         team,
			"uid":               fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
			"resourceVersion":   strconv.Itoa(100000 + i),
			"generation":        int64(1),
			"creationTimestamp": created.UTC().Format(time.RFC3339),
			"labels":            map[string]any{"team": team, "app.kubernetes.io/part-of": "bench"},
		},
		"spec": spec,
	}
}
