package karta

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// inferenceService builds an InferenceService whose predictor runs a huggingface model; workerSpec, when
// not empty, is the YAML of spec.predictor.workerSpec, indented under it.
func inferenceService(modelResources, workerSpec string) string {
	var b strings.Builder
	b.WriteString(`apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llm, namespace: serving}
spec:
  predictor:
    model:
      modelFormat: {name: huggingface}
      storageUri: pvc://models/llama
`)
	fmt.Fprintf(&b, "      resources: %s\n", modelResources)
	if workerSpec != "" {
		b.WriteString("    workerSpec:\n")
		for _, line := range strings.Split(strings.TrimSpace(workerSpec), "\n") {
			b.WriteString("      " + line + "\n")
		}
	}
	return b.String()
}

// TestBuiltinInferenceServiceMultiNode follows KServe 0.15's multi-node serving (multiNodeProcess,
// computeRayNodeAndGPUs, createRawDeployment): tensorParallelSize x pipelineParallelSize GPUs in all, split into
// Ray nodes by the GPUs the head's kserve-container and the worker's container request; the worker Deployment
// runs the nodes but the head. The stock multi-node runtime requests 2 cpu and 6Gi for both containers.
func TestBuiltinInferenceServiceMultiNode(t *testing.T) {
	tests := []struct {
		name           string
		modelResources string
		workerSpec     string
		pods           int64
		requests       map[string]string
		// shape is each component's pods and GPUs per pod, as "predictor:1x4 predictor-worker:2x4" (a worker
		// Deployment of no pods keeps its own GPU count).
		shape string
	}{
		{
			name:           "no workerSpec: the predictor alone, as the CR asks, with the runtime's default memory",
			modelResources: `{requests: {cpu: "4", nvidia.com/gpu: "2"}}`,
			pods:           1,
			requests:       map[string]string{"cpu": "4", "memory": "2Gi", "nvidia.com/gpu": "2"},
			shape:          "predictor:1x2",
		},
		{
			name:           "empty workerSpec: both sizes default to 1, so one head with one GPU and the multi-node runtime's memory",
			modelResources: `{requests: {cpu: "4"}}`,
			workerSpec:     `{}`,
			pods:           1,
			requests:       map[string]string{"cpu": "4", "memory": "6Gi", "nvidia.com/gpu": "1"},
			shape:          "predictor:1x1 predictor-worker:0x1",
		},
		{
			name:           "no container asks for GPUs: one GPU per Ray node, so pipeline 2 x tensor 4 runs 8 pods",
			modelResources: `{}`,
			workerSpec:     "pipelineParallelSize: 2\ntensorParallelSize: 4",
			pods:           8,
			requests:       map[string]string{"cpu": "16", "memory": "48Gi", "nvidia.com/gpu": "8"},
			shape:          "predictor:1x1 predictor-worker:7x1",
		},
		{
			name:           "the worker asks for 4 GPUs: 12 GPUs on 3 nodes, the head taking the 4 left",
			modelResources: `{requests: {cpu: "8", memory: 64Gi}}`,
			workerSpec: `pipelineParallelSize: 3
tensorParallelSize: 4
containers:
- name: worker-container
  resources: {requests: {cpu: "6", memory: 48Gi, nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}`,
			pods:     3,
			requests: map[string]string{"cpu": "20", "memory": "160Gi", "nvidia.com/gpu": "12"},
			shape:    "predictor:1x4 predictor-worker:2x4",
		},
		{
			name:           "only the head asks for a GPU: the other 11 GPUs go to single-GPU workers",
			modelResources: `{requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}`,
			workerSpec: `pipelineParallelSize: 3
tensorParallelSize: 4
containers:
- name: worker-container
  resources: {requests: {cpu: "6", memory: 48Gi}}`,
			pods:     12,
			requests: map[string]string{"cpu": "74", "memory": "592Gi", "nvidia.com/gpu": "12"},
			shape:    "predictor:1x1 predictor-worker:11x1",
		},
		{
			name:           "a head that asks for every GPU runs alone",
			modelResources: `{requests: {nvidia.com/gpu: "8"}}`,
			workerSpec: `pipelineParallelSize: 2
tensorParallelSize: 4
containers: [{resources: {requests: {nvidia.com/gpu: "4"}}}]`,
			pods:     1,
			requests: map[string]string{"cpu": "2", "memory": "6Gi", "nvidia.com/gpu": "8"},
			shape:    "predictor:1x8 predictor-worker:0x4",
		},
		{
			name:           "a worker that asks for every GPU leaves them all to the head, which runs alone",
			modelResources: `{}`,
			workerSpec: `pipelineParallelSize: 2
tensorParallelSize: 2
containers: [{resources: {requests: {nvidia.com/gpu: "8"}}}]`,
			pods:     1,
			requests: map[string]string{"cpu": "2", "memory": "6Gi", "nvidia.com/gpu": "4"},
			shape:    "predictor:1x4 predictor-worker:0x8",
		},
		{
			name:           "GPUs that cannot add up (head 2 + one worker of 4 < 8): KServe creates neither Deployment",
			modelResources: `{requests: {nvidia.com/gpu: "2"}}`,
			workerSpec: `pipelineParallelSize: 2
tensorParallelSize: 4
containers: [{resources: {requests: {nvidia.com/gpu: "4"}}}]`,
			pods:     0,
			requests: map[string]string{},
			shape:    "predictor:0x2 predictor-worker:0x4",
		},
		{
			name:           "GPUs given only as limits are not counted as asked for, but keep their type",
			modelResources: `{limits: {amd.com/gpu: "1"}}`,
			workerSpec: `pipelineParallelSize: 2
tensorParallelSize: 2
containers:
- resources: {limits: {amd.com/gpu: "1"}}`,
			pods:     4,
			requests: map[string]string{"amd.com/gpu": "4", "cpu": "8", "memory": "24Gi"},
			shape:    "predictor:1x1 predictor-worker:3x1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, inferenceService(tt.modelResources, tt.workerSpec))
			a := analyzeBuiltin(t, obj)
			checkTotals(t, a, tt.pods, tt.requests)
			var shape []string
			for _, c := range a.Components {
				var gpus int64
				for name, q := range c.PodRequests {
					if strings.Contains(string(name), "gpu") {
						gpus += q.Value()
					}
				}
				shape = append(shape, fmt.Sprintf("%s:%dx%d", c.Name, c.Pods, gpus))
			}
			if got := strings.Join(shape, " "); got != tt.shape {
				t.Errorf("shape %s, want %s", got, tt.shape)
			}
		})
	}
}

func TestBuiltinInferenceServiceReplicas(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		pods     int64
		requests map[string]string
	}{
		{
			name: "minReplicas 0 still starts one pod of each component",
			spec: `
  predictor: {minReplicas: 0, containers: [{name: kserve-container, resources: {requests: {nvidia.com/gpu: "1"}}}]}
  transformer: {minReplicas: 0, containers: [{name: t, resources: {requests: {cpu: "1"}}}]}`,
			pods:     2,
			requests: map[string]string{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
		},
		{
			name: "a canary from its traffic share: ceil(3 x 20 / 100) = 1 pod with its own model's GPUs, the stable predictor keeps 2",
			spec: `
  predictor: {minReplicas: 3, model: {modelFormat: {name: huggingface}, resources: {requests: {cpu: "2", nvidia.com/gpu: "1"}}}}
  canary:
  - trafficPercent: 20
    predictor: {name: v2, model: {resources: {requests: {nvidia.com/gpu: "2"}}}}`,
			pods:     3,
			requests: map[string]string{"cpu": "6", "memory": "6Gi", "nvidia.com/gpu": "4"},
		},
		{
			name: "canaries with their own minReplicas, and a stable predictor left to its floor of one",
			spec: `
  predictor: {minReplicas: 2, containers: [{name: kserve-container, resources: {requests: {cpu: "1"}}}]}
  canary:
  - {trafficPercent: 10, predictor: {minReplicas: 2}}
  - {trafficPercent: 10, predictor: {minReplicas: 1, containers: [{name: kserve-container, resources: {requests: {cpu: "3"}}}]}}`,
			pods:     4,
			requests: map[string]string{"cpu": "6", "memory": "8Gi"},
		},
		{
			name: "no canary and no minReplicas: one predictor pod",
			spec: `
  predictor: {containers: [{name: kserve-container, resources: {requests: {memory: 2Gi}}}]}`,
			pods:     1,
			requests: map[string]string{"cpu": "1", "memory": "2Gi"},
		},
		{
			name: "KServe's webhook fills in the main container's missing cpu and memory requests with 1 and 2Gi, whatever its limits; a sidecar gets none",
			spec: `
  predictor: {containers: [{name: kserve-container, resources: {limits: {cpu: "3"}}}, {name: proxy, resources: {requests: {cpu: 100m}}}]}
  transformer: {minReplicas: 2, containers: [{name: t, resources: {limits: {memory: 4Gi}}}]}
  explainer: {alibi: {type: AnchorTabular, resources: {requests: {cpu: 500m}}}}`,
			pods:     4,
			requests: map[string]string{"cpu": "3600m", "memory": "8Gi"}, // 1.1 + 2 × 1 + 0.5 cpu; 2 + 2 × 2 + 2 Gi
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: isvc}\nspec:"+tt.spec+"\n")
			checkTotals(t, analyzeBuiltin(t, obj), tt.pods, tt.requests)
		})
	}
}

// Canaries are instances of one component, told apart by their predictor's name or else their place in the list.
func TestBuiltinInferenceServiceCanaryInstances(t *testing.T) {
	obj := mustParseObject(t, `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc}
spec:
  predictor: {minReplicas: 4, containers: [{name: kserve-container}]}
  canary:
  - {trafficPercent: 10, predictor: {}}
  - {trafficPercent: 30, predictor: {name: v3}}
`)
	var got []string
	for _, c := range analyzeBuiltin(t, obj).Components {
		if c.Name == "canary" {
			got = append(got, fmt.Sprintf("%s:%d", c.Instance, c.Pods))
		}
	}
	// ceil(4 x 10%) = 1 and ceil(4 x 30%) = 2 pods.
	if want := []string{"canary-0:1", "v3:2"}; !slices.Equal(got, want) {
		t.Errorf("canary instances %v, want %v", got, want)
	}
}

// TestBuiltinInferenceServiceStopped: KServe runs no pod of any component while the service carries the
// annotation serving.kserve.io/stop: "true", in any case (GetForceStopRuntime), and runs them all otherwise.
func TestBuiltinInferenceServiceStopped(t *testing.T) {
	const spec = `
spec:
  predictor:
    minReplicas: 2
    model: {modelFormat: {name: huggingface}, resources: {requests: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"}}}
    workerSpec: {pipelineParallelSize: 2}
  transformer: {containers: [{name: t, resources: {requests: {cpu: "1", memory: 2Gi}}}]}
  canary: [{trafficPercent: 50, predictor: {name: v2}}]
`
	tests := []struct {
		name, annotations string
		pods              int64
		requests          map[string]string
	}{
		{"stopped", `{serving.kserve.io/stop: "true"}`, 0, map[string]string{}},
		{"stopped, the value in another case", `{serving.kserve.io/stop: "TRUE"}`, 0, map[string]string{}},
		// Predictor 2 - 1 canary pod, head and one worker (2 cpu, 6Gi) with a GPU each, the canary, the transformer.
		{"stop annotation false", `{serving.kserve.io/stop: "false"}`, 4,
			map[string]string{"cpu": "7", "memory": "16Gi", "nvidia.com/gpu": "3"}},
		{"no annotations", `{}`, 4, map[string]string{"cpu": "7", "memory": "16Gi", "nvidia.com/gpu": "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: isvc, annotations: "+
				tt.annotations+"}"+spec)
			checkTotals(t, analyzeBuiltin(t, obj), tt.pods, tt.requests)
		})
	}
}

// TestBuiltinInferenceServiceModelMesh: in ModelMesh mode the shared ModelMesh runtime serves the model and KServe
// reconciles no predictor of the service's own, only its transformer or explainer.
func TestBuiltinInferenceServiceModelMesh(t *testing.T) {
	const spec = `
spec:
  predictor:
    minReplicas: 2
    model: {modelFormat: {name: sklearn}, storageUri: "gs://models/iris", resources: {requests: {cpu: "2", memory: 4Gi}}}
  transformer: {containers: [{name: t, resources: {requests: {cpu: "1", memory: 2Gi}}}]}
`
	tests := []struct {
		name, annotations string
		pods              int64
		requests          map[string]string
	}{
		{"ModelMesh: the transformer alone", `{serving.kserve.io/deploymentMode: ModelMesh}`, 1, map[string]string{"cpu": "1", "memory": "2Gi"}},
		{"RawDeployment: predictor and transformer", `{serving.kserve.io/deploymentMode: RawDeployment}`, 3, map[string]string{"cpu": "5", "memory": "10Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: isvc, annotations: "+
				tt.annotations+"}"+spec)
			checkTotals(t, analyzeBuiltin(t, obj), tt.pods, tt.requests)
		})
	}
}

// TestBuiltinInferenceServiceStatus follows the conditions and model status KServe 0.15 writes: Ready from
// PredictorReady and IngressReady, Knative's configuration and routes in Serverless mode only, and a model
// status that says when KServe gave up on the predictor.
func TestBuiltinInferenceServiceStatus(t *testing.T) {
	tests := []struct {
		name, status string
		want         Phase
	}{
		{"ready", `{conditions: [{type: IngressReady, status: "True"}, {type: PredictorReady, status: "True"}, {type: Ready, status: "True"}], modelStatus: {transitionStatus: UpToDate}}`, PhaseRunning},
		{"starting", `{conditions: [{type: PredictorReady, status: "False", reason: MinimumReplicasUnavailable}, {type: Ready, status: "False"}], modelStatus: {transitionStatus: InProgress, states: {targetModelState: Pending}}}`, PhaseInitializing},
		{"Serverless revision failed", `{conditions: [{type: PredictorConfigurationReady, status: "False"}, {type: PredictorReady, status: "False"}, {type: RoutesReady, status: "False"}, {type: Ready, status: "False"}]}`, PhaseFailed},
		{"no runtime supports the model", `{conditions: [{type: Ready, status: "Unknown"}], modelStatus: {transitionStatus: InvalidSpec, states: {targetModelState: FailedToLoad}, lastFailureInfo: {reason: NoSupportingRuntime}}}`, PhaseFailed},
		{"storage initializer failed", `{conditions: [{type: PredictorReady, status: "False"}, {type: Ready, status: "False"}], modelStatus: {transitionStatus: BlockedByFailedLoad, states: {targetModelState: FailedToLoad}, lastFailureInfo: {reason: ModelLoadFailed}}}`, PhaseFailed},
		{"multi-node GPUs that cannot add up", `{conditions: [{type: PredictorReady, status: "False", reason: InvalidGPUAllocation}, {type: Ready, status: "False"}]}`, PhaseFailed},
		{"model failed to load, no conditions yet", `{modelStatus: {transitionStatus: BlockedByFailedLoad}}`, PhaseFailed},
		// PropagateModelStatus checks the first pod's storage-initializer before Ready: a serving service with a
		// new replica whose download failed still serves.
		// An update KServe cannot build stops the reconcile and leaves the previous Deployment serving.
		{"ready, then updated to a spec no runtime supports", `{conditions: [{type: PredictorReady, status: "True"}, {type: Ready, status: "True"}], modelStatus: {transitionStatus: InvalidSpec, states: {activeModelState: Loaded, targetModelState: FailedToLoad}, lastFailureInfo: {reason: NoSupportingRuntime}}}`, PhaseDegraded},
		{"ready, a new replica failed to load", `{conditions: [{type: PredictorReady, status: "True"}, {type: Ready, status: "True"}], modelStatus: {transitionStatus: BlockedByFailedLoad, states: {activeModelState: Loaded, targetModelState: FailedToLoad}, lastFailureInfo: {reason: ModelLoadFailed}}}`, PhaseDegraded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc, annotations: {serving.kserve.io/deploymentMode: RawDeployment}}
spec:
  predictor: {model: {modelFormat: {name: sklearn}}}
status: `+tt.status+"\n"))
			if a.Status != tt.want {
				t.Errorf("status %s, want %s", a.Status, tt.want)
			}
		})
	}
}

// TestBuiltinInferenceServiceAutoscalerClassNone: with autoscalerClass none KServe's raw Deployment runs exactly
// minReplicas (createRawDefaultDeployment), so minReplicas 0 runs no pods; the component's own annotation
// overrides the service's. Any other class keeps one pod at least.
func TestBuiltinInferenceServiceAutoscalerClassNone(t *testing.T) {
	tests := []struct {
		name, annotations, transformerAnnotations string
		pods                                      int64
	}{
		{"hpa: one pod each", `{serving.kserve.io/autoscalerClass: hpa}`, `{}`, 2},
		{"none: no pods", `{serving.kserve.io/autoscalerClass: none}`, `{}`, 0},
		{"none on the service, hpa on the transformer", `{serving.kserve.io/autoscalerClass: none}`, `{serving.kserve.io/autoscalerClass: hpa}`, 1},
		{"none on the transformer only", `{}`, `{serving.kserve.io/autoscalerClass: none}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: isvc, annotations: `+tt.annotations+`}
spec:
  predictor: {minReplicas: 0, containers: [{name: kserve-container, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
  transformer: {minReplicas: 0, annotations: `+tt.transformerAnnotations+`, containers: [{name: t, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
`)
			if got := analyzeBuiltin(t, obj).TotalPods; got != tt.pods {
				t.Errorf("TotalPods = %d, want %d", got, tt.pods)
			}
		})
	}
}

// TestBuiltinInferenceServiceAgent: KServe's pod webhook (InjectAgent) adds the agent sidecar, 100m cpu and
// 100Mi in the stock inferenceservice-config, to pods that log or batch and to a multi-model predictor's.
func TestBuiltinInferenceServiceAgent(t *testing.T) {
	tests := []struct {
		name, spec string
		requests   map[string]string
	}{
		{
			name:     "a model with its storageUri, no logger: no agent",
			spec:     `predictor: {sklearn: {storageUri: "gs://models/iris", resources: {requests: {cpu: "1", memory: 1Gi}}}}`,
			requests: map[string]string{"cpu": "1", "memory": "1Gi"},
		},
		{
			name:     "a predictor that logs",
			spec:     `predictor: {logger: {mode: all}, sklearn: {storageUri: "gs://models/iris", resources: {requests: {cpu: "1", memory: 1Gi}}}}`,
			requests: map[string]string{"cpu": "1100m", "memory": "1124Mi"},
		},
		{
			name:     "a predictor that batches, and a transformer and an explainer that log",
			spec:     `{predictor: {batcher: {maxBatchSize: 8}, model: {modelFormat: {name: pytorch}, storageUri: "gs://m", resources: {requests: {cpu: "1", memory: 1Gi}}}}, transformer: {logger: {mode: all}, containers: [{name: t, resources: {requests: {cpu: "1", memory: 1Gi}}}]}, explainer: {logger: {mode: all}, containers: [{name: e, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}`,
			requests: map[string]string{"cpu": "3300m", "memory": "3372Mi"},
		},
		{
			name:     "an explainer does not batch",
			spec:     `{predictor: {containers: [{name: kserve-container, resources: {requests: {cpu: "1", memory: 1Gi}}}]}, explainer: {batcher: {}, containers: [{name: e, resources: {requests: {cpu: "1", memory: 1Gi}}}]}}`,
			requests: map[string]string{"cpu": "2", "memory": "2Gi"},
		},
		{
			name:     "a multi-model predictor (no storageUri): the agent pulls its models",
			spec:     `predictor: {triton: {resources: {requests: {cpu: "1", memory: 2Gi}}}}`,
			requests: map[string]string{"cpu": "1100m", "memory": "2148Mi"},
		},
		{
			name:     "a huggingface model without storageUri loads by model id, not multi-model",
			spec:     `predictor: {model: {modelFormat: {name: huggingface}, args: [--model_id=x], resources: {requests: {cpu: "1", memory: 2Gi}}}}`,
			requests: map[string]string{"cpu": "1", "memory": "2Gi"},
		},
		{
			name:     "a custom multi-model server says so in its first container's env",
			spec:     `predictor: {containers: [{name: kserve-container, env: [{name: MULTI_MODEL_SERVER, value: "true"}], resources: {requests: {cpu: "1", memory: 2Gi}}}]}`,
			requests: map[string]string{"cpu": "1100m", "memory": "2148Mi"},
		},
		{
			name:     "an agent already in the pod is not added again",
			spec:     `predictor: {logger: {mode: all}, containers: [{name: kserve-container, resources: {requests: {cpu: "1", memory: 2Gi}}}, {name: agent, resources: {requests: {cpu: 200m, memory: 200Mi}}}]}`,
			requests: map[string]string{"cpu": "1200m", "memory": "2248Mi"},
		},
		{
			name: "a multi-node predictor that logs: the head and the worker both get it",
			spec: `predictor: {logger: {mode: all}, model: {modelFormat: {name: huggingface}, storageUri: "pvc://m/llama", resources: {requests: {cpu: "4", memory: 8Gi}}},
    workerSpec: {pipelineParallelSize: 2, containers: [{resources: {requests: {cpu: "4", memory: 8Gi}}}]}}`,
			requests: map[string]string{"cpu": "8200m", "memory": "16584Mi", "nvidia.com/gpu": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: isvc}\nspec:\n  "+tt.spec+"\n")
			a := analyzeBuiltin(t, obj)
			checkTotals(t, a, a.TotalPods, tt.requests)
		})
	}
}

// TestBuiltinInferenceServiceGKEAccelerator: KServe's pod webhook (InjectGKEAcceleratorSelector) pins a pod with an
// nvidia.com/gpu limit to the GKE accelerator its service or component names in serving.kserve.io/gke-accelerator.
func TestBuiltinInferenceServiceGKEAccelerator(t *testing.T) {
	tests := []struct {
		name, annotations, spec string
		// want is each component's cloud.google.com/gke-accelerator node selector, "-" for none.
		want string
	}{
		{
			name:        "a GPU limit on the predictor, another node selector kept",
			annotations: `{serving.kserve.io/gke-accelerator: nvidia-tesla-t4}`,
			spec:        `predictor: {nodeSelector: {pool: gpu}, tensorflow: {storageUri: "gs://m", resources: {limits: {nvidia.com/gpu: "1"}}}}`,
			want:        "predictor=nvidia-tesla-t4",
		},
		{
			name:        "a GPU request alone is not a limit",
			annotations: `{serving.kserve.io/gke-accelerator: nvidia-tesla-t4}`,
			spec:        `predictor: {tensorflow: {storageUri: "gs://m", resources: {requests: {nvidia.com/gpu: "1"}}}}`,
			want:        "predictor=-",
		},
		{
			name:        "no annotation, no selector",
			annotations: `{}`,
			spec:        `predictor: {tensorflow: {storageUri: "gs://m", resources: {limits: {nvidia.com/gpu: "1"}}}}`,
			want:        "predictor=-",
		},
		{
			name:        "a transformer without GPUs is not pinned; its own annotation wins over the service's",
			annotations: `{serving.kserve.io/gke-accelerator: nvidia-tesla-t4}`,
			spec: `predictor: {tensorflow: {storageUri: "gs://m", resources: {limits: {nvidia.com/gpu: "1"}}}}
  transformer: {containers: [{name: t}]}
  explainer: {annotations: {serving.kserve.io/gke-accelerator: nvidia-l4}, containers: [{name: e, resources: {limits: {nvidia.com/gpu: "1"}}}]}`,
			want: "predictor=nvidia-tesla-t4 transformer=- explainer=nvidia-l4",
		},
		{
			name:        "a multi-node head and worker get their GPU limits from KServe",
			annotations: `{serving.kserve.io/gke-accelerator: nvidia-h100-80gb}`,
			spec: `predictor: {model: {modelFormat: {name: huggingface}, storageUri: "pvc://m/llama"},
    workerSpec: {pipelineParallelSize: 2}}`,
			want: "predictor=nvidia-h100-80gb predictor-worker=nvidia-h100-80gb",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata: {name: isvc, annotations: "+
				tt.annotations+"}\nspec:\n  "+tt.spec+"\n")
			var got []string
			for _, c := range analyzeBuiltin(t, obj).Components {
				acc, ok := c.NodeSelector["cloud.google.com/gke-accelerator"]
				if !ok {
					acc = "-"
				}
				got = append(got, c.Name+"="+acc)
				if c.Name == "predictor" && strings.Contains(tt.spec, "pool: gpu") && c.NodeSelector["pool"] != "gpu" {
					t.Errorf("predictor node selector %v lost pool: gpu", c.NodeSelector)
				}
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("accelerators %s, want %s", g, tt.want)
			}
		})
	}
}
