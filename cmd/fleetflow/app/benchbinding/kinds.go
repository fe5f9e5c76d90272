package benchbinding

import (
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is a workload kind the bench submits gangs of: how to build one whose pods all request the same GPUs,
// and how to find its pods on a workload cluster.
type Kind struct {
	Name string
	GVK  schema.GroupVersionKind
	// PodLabel is the label its operator puts on every pod of a workload, with the workload's name as value.
	PodLabel string
	// Operator names what creates its pods on a workload cluster.
	Operator string
	build    func(g gang) map[string]any
}

// Kinds are the kinds --kinds names. Only kinds whose operator the local fleet runs can be submitted.
var Kinds = []Kind{
	{Name: "job", GVK: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"},
		PodLabel: "batch.kubernetes.io/job-name", Operator: builtinOperator, build: buildJob},
	{Name: "pytorchjob", GVK: schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"},
		PodLabel: "training.kubeflow.org/job-name", Operator: "training-operator", build: buildPyTorchJob},
	{Name: "jobset", GVK: schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
		PodLabel: "jobset.sigs.k8s.io/jobset-name", Operator: "jobset-controller", build: buildJobSet},
	{Name: "lws", GVK: schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
		PodLabel: "leaderworkerset.sigs.k8s.io/name", Operator: "lws-controller", build: buildLWS},
	{Name: "raycluster", GVK: schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"},
		PodLabel: "ray.io/cluster", Operator: "kuberay-operator", build: buildRayCluster},
}

// KindNames lists the names of Kinds.
func KindNames() []string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	return names
}

func kindNamed(name string) *Kind {
	for i := range Kinds {
		if Kinds[i].Name == name {
			return &Kinds[i]
		}
	}
	return nil
}

// gang is one workload to submit: pods pods of gpus GPUs each.
type gang struct {
	kind      *Kind
	namespace string
	name      string
	pods      int
	gpus      int
}

// object is the gang as the CR to submit.
func (g gang) object() *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": g.kind.GVK.GroupVersion().String(), "kind": g.kind.GVK.Kind,
		"metadata": map[string]any{"name": g.name, "namespace": g.namespace},
		"spec":     g.kind.build(g),
	}}
	return obj
}

// podTemplate is the pod every pod of the gang runs: gpus GPUs, one CPU, and kwok's delay before a Job's pod
// completes set past any run, so every pod holds its GPUs for the whole measurement.
func (g gang) podTemplate(container string, restartPolicy string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"pod-complete.stage.kwok.x-k8s.io/delay": "24h"}},
		"spec": map[string]any{"restartPolicy": restartPolicy, "containers": []any{map[string]any{
			"name": container, "image": "example.com/train:1",
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": strconv.Itoa(g.gpus)},
				"limits":   map[string]any{"nvidia.com/gpu": strconv.Itoa(g.gpus)},
			},
		}}},
	}
}

func buildJob(g gang) map[string]any {
	return map[string]any{"parallelism": int64(g.pods), "completions": int64(g.pods), "backoffLimit": int64(0),
		"template": g.podTemplate("train", "Never")}
}

func buildPyTorchJob(g gang) map[string]any {
	specs := map[string]any{"Master": map[string]any{"replicas": int64(1), "restartPolicy": "OnFailure",
		"template": g.podTemplate("pytorch", "OnFailure")}}
	if g.pods > 1 {
		specs["Worker"] = map[string]any{"replicas": int64(g.pods - 1), "restartPolicy": "OnFailure",
			"template": g.podTemplate("pytorch", "OnFailure")}
	}
	return map[string]any{"pytorchReplicaSpecs": specs}
}

func buildJobSet(g gang) map[string]any {
	return map[string]any{"replicatedJobs": []any{map[string]any{"name": "workers", "replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{"parallelism": int64(g.pods), "completions": int64(g.pods),
			"backoffLimit": int64(0), "template": g.podTemplate("train", "Never")}}}}}
}

func buildLWS(g gang) map[string]any {
	return map[string]any{"replicas": int64(1), "leaderWorkerTemplate": map[string]any{"size": int64(g.pods),
		"workerTemplate": g.podTemplate("serve", "Always")}}
}

func buildRayCluster(g gang) map[string]any {
	spec := map[string]any{"headGroupSpec": map[string]any{"rayStartParams": map[string]any{},
		"template": g.podTemplate("ray-head", "Always")}}
	if g.pods > 1 {
		spec["workerGroupSpecs"] = []any{map[string]any{"groupName": "workers", "replicas": int64(g.pods - 1),
			"minReplicas": int64(g.pods - 1), "maxReplicas": int64(g.pods - 1), "rayStartParams": map[string]any{},
			"template": g.podTemplate("ray-worker", "Always")}}
	}
	return spec
}
