package frameworks

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// frameworkCase is one framework kind: its CRD and a sample CR, from the corpus when it has them and from
// this package's testdata otherwise, and a status that the kind's built-in RI maps to Running.
type frameworkCase struct {
	gvk schema.GroupVersionKind
	// corpusCRD and corpusSample are relative to the corpus root; empty when the corpus has none.
	corpusCRD, corpusSample string
	// ownCRD is the minimal CRD of internal/frameworkcrds, ownSample this package's small sample.
	ownCRD, ownSample string
	// running is what the framework's controller would write once the workload runs; each one is read
	// off the statusMappings.running of deploy/resourceinterfaces/<kind>.yaml, in the shape the real CRD's
	// status schema accepts (metav1.Condition needs reason, message and lastTransitionTime).
	running func(cr *unstructured.Unstructured) map[string]any
}

func (c frameworkCase) name() string { return c.gvk.Kind + "_" + c.gvk.Version }

// frameworkCases lists the kinds in submission order. The order matters for the fleet's story: every
// placed CR keeps its reservation for the rest of the test (no kubelet ever runs its pods), so early GPU
// workloads use up cluster-a's free GPUs, and the prediction replays the same order. The mpi-operator's
// MPIJob v2beta1 comes last because its CRD has the same name as the training-operator's v1 CRD and
// replaces it.
func frameworkCases() []frameworkCase {
	return []frameworkCase{
		{
			gvk:       schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"},
			corpusCRD: "training-operator/crds/kubeflow.org_pytorchjobs.yaml", corpusSample: "training-operator/samples/pytorchjob-mnist-gloo-gpu.yaml",
			ownCRD: "../../internal/frameworkcrds/pytorchjobs.yaml", ownSample: "testdata/samples/pytorchjob.yaml",
			running: trainingJobRunning,
		},
		{
			gvk:       schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"},
			corpusCRD: "kuberay/crds/ray.io_rayclusters.yaml", corpusSample: "kuberay/samples/raycluster-verl-4gpu.yaml",
			ownCRD: "../../internal/frameworkcrds/rayclusters.yaml", ownSample: "testdata/samples/raycluster.yaml",
			running: func(*unstructured.Unstructured) map[string]any { return map[string]any{"state": "ready"} },
		},
		{
			gvk:       schema.GroupVersionKind{Group: "serving.kserve.io", Version: "v1beta1", Kind: "InferenceService"},
			corpusCRD: "kserve/crds/serving.kserve.io_inferenceservices.yaml", corpusSample: "kserve/samples/isvc-huggingface-llama2-gpu.yaml",
			ownCRD: "../../internal/frameworkcrds/inferenceservices.yaml", ownSample: "testdata/samples/inferenceservice.yaml",
			running: func(*unstructured.Unstructured) map[string]any {
				return map[string]any{"conditions": []any{condition("PredictorReady", "True", "Ready"), condition("Ready", "True", "Ready")}}
			},
		},
		{
			gvk:       schema.GroupVersionKind{Group: "nvidia.com", Version: "v1alpha1", Kind: "DynamoGraphDeployment"},
			corpusCRD: "dynamo/crds/nvidia.com_dynamographdeployments.yaml", corpusSample: "dynamo/samples/dgd-h200-disagg-profiling.yaml",
			ownCRD: "../../internal/frameworkcrds/dynamographdeployments.yaml", ownSample: "testdata/samples/dynamographdeployment.yaml",
			running: func(*unstructured.Unstructured) map[string]any { return map[string]any{"state": "successful"} },
		},
		{
			gvk:       schema.GroupVersionKind{Group: "milvus.io", Version: "v1beta1", Kind: "Milvus"},
			corpusCRD: "milvus-operator/crds/milvus.io_milvuses.yaml", corpusSample: "milvus-operator/samples/milvus-cluster-demo.yaml",
			ownCRD: "../../internal/frameworkcrds/milvuses.yaml", ownSample: "testdata/samples/milvus.yaml",
			running: func(*unstructured.Unstructured) map[string]any {
				return map[string]any{"status": "Healthy", "conditions": []any{condition("MilvusReady", "True", "ReasonMilvusHealthy")}}
			},
		},
		{
			gvk:       schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
			corpusCRD: "jobset/crds/jobset.x-k8s.io_jobsets.yaml", corpusSample: "jobset/samples/jobset-topology-aware-scheduling.yaml",
			ownCRD: "../../internal/frameworkcrds/jobsets.yaml", ownSample: "testdata/samples/jobset.yaml",
			running: jobSetRunning,
		},
		{
			gvk:       schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MPIJob"},
			corpusCRD: "training-operator/crds/kubeflow.org_mpijobs.yaml", corpusSample: "training-operator/samples/mpijob-tensorflow-mnist.yaml",
			ownCRD: "../../internal/frameworkcrds/mpijobs-v1.yaml", ownSample: "testdata/samples/mpijob-v1.yaml",
			running: trainingJobRunning,
		},
		{
			gvk:       schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayJob"},
			corpusCRD: "kuberay/crds/ray.io_rayjobs.yaml", corpusSample: "kuberay/samples/rayjob-sample.yaml",
			ownCRD: "../../internal/frameworkcrds/rayjobs.yaml", ownSample: "testdata/samples/rayjob.yaml",
			running: func(*unstructured.Unstructured) map[string]any {
				return map[string]any{"jobDeploymentStatus": "Running", "jobStatus": "RUNNING"}
			},
		},
		{
			gvk:       schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayService"},
			corpusCRD: "kuberay/crds/ray.io_rayservices.yaml", corpusSample: "kuberay/samples/rayservice-llm-serve-4gpu-autoscaling.yaml",
			ownCRD: "../../internal/frameworkcrds/rayservices.yaml", ownSample: "testdata/samples/rayservice.yaml",
			running: func(*unstructured.Unstructured) map[string]any {
				return map[string]any{"conditions": []any{condition("Ready", "True", "NonZeroServeEndpoints")}}
			},
		},
		{
			gvk:       schema.GroupVersionKind{Group: "apps.nvidia.com", Version: "v1alpha1", Kind: "NIMService"},
			corpusCRD: "nim-operator/crds/apps.nvidia.com_nimservices.yaml", corpusSample: "nim-operator/samples/nimservice-multi-node.yaml",
			ownCRD: "../../internal/frameworkcrds/nimservices.yaml", ownSample: "testdata/samples/nimservice.yaml",
			running: func(*unstructured.Unstructured) map[string]any { return map[string]any{"state": "Ready"} },
		},
		{
			gvk:       schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
			corpusCRD: "lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml", corpusSample: "lws/samples/lws-vllm-gpu.yaml",
			ownCRD: "../../internal/frameworkcrds/leaderworkersets.yaml", ownSample: "testdata/samples/leaderworkerset.yaml",
			running: func(*unstructured.Unstructured) map[string]any {
				return map[string]any{"conditions": []any{condition("Available", "True", "AllGroupsReady")}}
			},
		},
		{
			// The corpus has no mpi-operator CRD or sample: ours are used either way.
			gvk:    schema.GroupVersionKind{Group: "kubeflow.org", Version: "v2beta1", Kind: "MPIJob"},
			ownCRD: "../../internal/frameworkcrds/mpijobs-v2beta1.yaml", ownSample: "testdata/samples/mpijob-v2beta1.yaml",
			running: trainingJobRunning,
		},
	}
}

// trainingJobRunning is the Kubeflow job status of a running job (PyTorchJob, MPIJob v1 and v2beta1).
func trainingJobRunning(*unstructured.Unstructured) map[string]any {
	return map[string]any{"conditions": []any{condition("Created", "True", "JobCreated"), condition("Running", "True", "JobRunning")}}
}

// jobSetRunning reports every Job of every replicated job active and ready: the JobSet RI maps a JobSet to
// Running once all its Jobs are ready (or done), and one with pods still pending to Initializing.
func jobSetRunning(cr *unstructured.Unstructured) map[string]any {
	jobs, _, _ := unstructured.NestedSlice(cr.Object, "spec", "replicatedJobs")
	statuses := make([]any, 0, len(jobs))
	for _, job := range jobs {
		rj, _ := job.(map[string]any)
		name, _ := rj["name"].(string)
		replicas := int64(1)
		switch n := rj["replicas"].(type) { // as decoded from YAML or JSON
		case int64:
			replicas = n
		case float64:
			replicas = int64(n)
		}
		statuses = append(statuses, map[string]any{
			"name": name, "active": replicas, "ready": replicas, "succeeded": int64(0), "failed": int64(0), "suspended": int64(0),
		})
	}
	return map[string]any{"replicatedJobsStatus": statuses}
}

func condition(conditionType, status, reason string) map[string]any {
	return map[string]any{"type": conditionType, "status": status, "reason": reason,
		"message": "set by the frameworks e2e test acting as the controller", "lastTransitionTime": "2026-01-01T00:00:00Z"}
}
