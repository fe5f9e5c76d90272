package karta

import "testing"

// BenchmarkAnalyzeInferenceService measures one analysis of an InferenceService with a transformer, with a
// single-node model server and with a multi-node one (the head's and workers' GPU split).
func BenchmarkAnalyzeInferenceService(b *testing.B) {
	const service = `apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
metadata: {name: llm, namespace: serving, annotations: {serving.kserve.io/deploymentMode: RawDeployment, serving.kserve.io/autoscalerClass: none}}
spec:
  predictor:
    nodeSelector: {pool: gpu}
    tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
    model:
      modelFormat: {name: huggingface}
      storageUri: pvc://models/llama
      resources: {requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}
`
	const transformer = `  transformer:
    containers: [{name: t, resources: {requests: {cpu: "1"}}}]
`
	const workers = `    workerSpec:
      pipelineParallelSize: 4
      tensorParallelSize: 4
      containers: [{name: worker-container, resources: {requests: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "4"}}}]
`
	for _, bm := range []struct{ name, yaml string }{
		{"SingleNode", service + transformer},
		{"MultiNode", service + workers + transformer},
	} {
		b.Run(bm.name, func(b *testing.B) { benchmarkBuiltinAnalysis(b, mustParseObject(b, bm.yaml)) })
	}
}
