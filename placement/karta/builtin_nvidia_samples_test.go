package karta

import (
	"testing"
)

// Tests of the built-in RIs of DynamoGraphDeployment, NIMService and Milvus against what their operators
// do (see each RI file's header for the operator code followed). CRs are small and written here.

// benchNvidiaKinds are CRs of the three kinds, big enough to exercise every path of their RIs.
var benchNvidiaKinds = map[string]string{
	"dynamo": `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: dgd, namespace: ml}
spec:
  services:
    Frontend: {componentType: frontend, replicas: 2, extraPodSpec: {mainContainer: {image: img}}}
    Planner: {componentType: planner, resources: {requests: {cpu: "1", memory: 2Gi}}}
    Decode:
      componentType: worker
      replicas: 4
      multinode: {nodeCount: 2}
      resources: {requests: {cpu: "16", memory: 64Gi, gpu: "8"}, limits: {gpu: "8", custom: {rdma/ib: "1"}}}
      extraPodSpec:
        nodeSelector: {nvidia.com/gpu.product: H100}
        tolerations: [{key: nvidia.com/gpu, operator: Exists}]
        mainContainer: {image: img, resources: {limits: {ephemeral-storage: 10Gi}}}
    Prefill:
      componentType: worker
      replicas: 2
      resources: {limits: {gpu: "2", gpuType: nvidia.com/mig-3g.40gb}}
`,
	"milvus": `
apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: mv, namespace: db}
spec:
  mode: cluster
  components:
    image: milvusdb/milvus:v2.6.3
    nodeSelector: {pool: db}
    resources: {requests: {cpu: "1", memory: 4Gi}}
    proxy: {replicas: 2}
    queryNode: {replicas: 3, resources: {requests: {cpu: "8", memory: 32Gi}}}
  dependencies:
    msgStreamType: kafka
`,
}

func BenchmarkAnalyzeNvidiaKinds(b *testing.B) {
	for name, y := range benchNvidiaKinds {
		b.Run(name, func(b *testing.B) {
			obj := mustParseObject(b, y)
			c, ok := builtinRegistry(b).Lookup(GVKOf(obj))
			if !ok {
				b.Fatalf("no RI for %v", GVKOf(obj))
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Analyze(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// dgd builds a v1alpha1 DynamoGraphDeployment from the YAML of its spec.services (indented two spaces) and
// its status (a flow map, or "").
func dgd(services, status string) string {
	y := "apiVersion: nvidia.com/v1alpha1\nkind: DynamoGraphDeployment\nmetadata: {name: dgd, namespace: ml}\nspec:\n  services:\n" + services
	if status != "" {
		y += "status: " + status + "\n"
	}
	return y
}

// TestBuiltinDynamoServicePods: the Dynamo operator ignores the deprecated autoscaling field (scaling goes
// through the DynamoGraphDeploymentScalingAdapter, which writes replicas), so a service runs replicas
// (default 1) groups of multinode.nodeCount pods whatever autoscaling says.
func TestBuiltinDynamoServicePods(t *testing.T) {
	tests := []struct {
		name     string
		services string
		pods     int64
		requests map[string]string
	}{
		{"autoscaling enabled with a larger minReplicas: replicas still rule", `
    Worker: {replicas: 1, autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 9}, resources: {limits: {gpu: "1"}}}
`, 1, map[string]string{"nvidia.com/gpu": "1"}},
		{"autoscaling enabled, no replicas: the default of 1 group of nodeCount pods", `
    Worker: {autoscaling: {enabled: true, maxReplicas: 8}, multinode: {nodeCount: 4}, resources: {requests: {gpu: "8"}}}
`, 4, map[string]string{"nvidia.com/gpu": "32"}},
		{"replicas 0 with autoscaling: nothing runs", `
    Worker: {replicas: 0, autoscaling: {enabled: true, minReplicas: 2}, resources: {limits: {gpu: "1"}}}
`, 0, map[string]string{}},
		{"frontend and planner without resources ask for nothing", `
    Frontend: {componentType: frontend, replicas: 2}
    Planner: {componentType: planner}
`, 3, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, dgd(tt.services, "")))
			checkTotals(t, a, tt.pods, tt.requests)
			for _, c := range a.Components {
				if c.MinReplicas != nil || c.MaxReplicas != nil {
					t.Errorf("%s: min/max replicas %v/%v, want none (autoscaling is ignored)", c.Instance, c.MinReplicas, c.MaxReplicas)
				}
			}
		})
	}
}

// TestBuiltinDynamoGPUType: GetResourcesConfig puts "gpu" under the resource gpuType names (nvidia.com/gpu when
// it is empty), never under a resource called gpuType, and writes custom resources last, so they win.
func TestBuiltinDynamoGPUType(t *testing.T) {
	tests := []struct {
		name      string
		resources string
		requests  map[string]string
	}{
		{"gpuType names the GPU resource", `{limits: {gpu: "2", gpuType: nvidia.com/mig-3g.40gb}}`,
			map[string]string{"nvidia.com/mig-3g.40gb": "4"}},
		{"gpuType in requests only: the limit stays nvidia.com/gpu", `{requests: {cpu: "2", gpu: "1", gpuType: gpu.intel.com/xe}, limits: {gpu: "1"}}`,
			map[string]string{"cpu": "4", "gpu.intel.com/xe": "2", "nvidia.com/gpu": "2"}},
		{"empty gpuType: nvidia.com/gpu", `{requests: {gpu: "1", gpuType: ""}}`, map[string]string{"nvidia.com/gpu": "2"}},
		{"custom wins over gpu for the same resource", `{limits: {gpu: "1", custom: {nvidia.com/gpu: "4"}}}`,
			map[string]string{"nvidia.com/gpu": "8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, dgd("    Worker: {replicas: 2, resources: "+tt.resources+"}\n", ""))
			checkTotals(t, analyzeBuiltin(t, obj), 2, tt.requests)
		})
	}
}

// TestBuiltinDynamoStatus: status.state is initializing (the CRD default, before the operator's first
// reconcile), pending, successful or failed.
func TestBuiltinDynamoStatus(t *testing.T) {
	tests := []struct {
		state string
		want  Phase
	}{
		{"initializing", PhaseInitializing},
		{"pending", PhaseInitializing},
		{"successful", PhaseRunning},
		{"failed", PhaseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			obj := mustParseObject(t, dgd("    Frontend: {}\n", "{state: "+tt.state+"}"))
			if got := analyzeBuiltin(t, obj).Status; got != tt.want {
				t.Errorf("status %s, want %s", got, tt.want)
			}
		})
	}
}
