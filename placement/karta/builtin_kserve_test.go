package karta

import (
	"fmt"
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

func TestBuiltinInferenceServiceMultiNode(t *testing.T) {
	tests := []struct {
		name           string
		modelResources string
		workerSpec     string
		pods           int64
		requests       map[string]string
	}{
		{
			name:           "no workerSpec: the predictor alone, as the CR asks",
			modelResources: `{requests: {cpu: "4", nvidia.com/gpu: "2"}}`,
			pods:           1,
			requests:       map[string]string{"cpu": "4", "nvidia.com/gpu": "2"},
		},
		{
			name:           "empty workerSpec: both sizes default to 1, so one head with one GPU and no worker",
			modelResources: `{requests: {cpu: "4"}}`,
			workerSpec:     `{}`,
			pods:           1,
			requests:       map[string]string{"cpu": "4", "nvidia.com/gpu": "1"},
		},
		{
			name:           "pipeline 3 x tensor 4: the head and two workers, 4 GPUs each, replacing the model's own count",
			modelResources: `{requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "1"}}`,
			workerSpec: `pipelineParallelSize: 3
tensorParallelSize: 4
containers:
- name: worker-container
  resources: {requests: {cpu: "6", memory: 48Gi}}`,
			pods:     3,
			requests: map[string]string{"cpu": "20", "memory": "160Gi", "nvidia.com/gpu": "12"},
		},
		{
			name:           "a container that asks for AMD GPUs gets tensorParallelSize of them, not NVIDIA ones",
			modelResources: `{limits: {amd.com/gpu: "1"}}`,
			workerSpec: `pipelineParallelSize: 2
tensorParallelSize: 2
containers:
- resources: {limits: {amd.com/gpu: "1"}}`,
			pods:     2,
			requests: map[string]string{"amd.com/gpu": "4"},
		},
		{
			name:           "a worker without containers still gets its GPUs",
			modelResources: `{}`,
			workerSpec:     "pipelineParallelSize: 2\ntensorParallelSize: 8",
			pods:           2,
			requests:       map[string]string{"nvidia.com/gpu": "16"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, inferenceService(tt.modelResources, tt.workerSpec))
			checkTotals(t, analyzeBuiltin(t, obj), tt.pods, tt.requests)
		})
	}
}
