package karta

import (
	"slices"
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
	"nimservice": `
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: nim, namespace: ai}
spec:
  image: {repository: nvcr.io/nim/deepseek-ai/deepseek-r1, tag: "1.7.3"}
  storage: {nimCache: {name: deepseek, profile: 4f9fe3a5}}
  replicas: 2
  resources: {requests: {cpu: "32", memory: 512Gi}}
  multiNode: {parallelism: {pipeline: 2, tensor: 8}}
  nodeSelector: {nvidia.com/gpu.product: H100}
  tolerations: [{key: nvidia.com/gpu, operator: Exists}]
`,
}

// BenchmarkAnalyzeNvidiaKinds measures one analysis of each of benchNvidiaKinds with its precompiled built-in RI.
func BenchmarkAnalyzeNvidiaKinds(b *testing.B) {
	for name, y := range benchNvidiaKinds {
		b.Run(name, func(b *testing.B) { benchmarkBuiltinAnalysis(b, mustParseObject(b, y)) })
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

// milvus builds a Milvus from the YAML of its spec (indented two spaces) and its status (a flow map, or "").
func milvus(spec, status string) string {
	y := "apiVersion: milvus.io/v1beta1\nkind: Milvus\nmetadata: {name: mv, namespace: db}\nspec:\n" + spec
	if status != "" {
		y += "status: " + status + "\n"
	}
	return y
}

// noMilvusDependencies marks every dependency external, so only Milvus's own pods count.
const noMilvusDependencies = "  dependencies: {etcd: {external: true}, storage: {external: true}, pulsar: {external: true}, kafka: {external: true}}\n"

func componentNames(a *Analysis) []string {
	var out []string
	for _, c := range a.Components {
		out = append(out, c.Name)
	}
	return out
}

// TestBuiltinMilvusStreamingNode: the operator runs a streaming node in cluster mode for Milvus 2.6 or later
// (spec.components.version, else the image tag; a "master-" tag counts, and without an image its default
// image is 2.6), else as spec.components.streamingMode says, else when streamingNode is given.
func TestBuiltinMilvusStreamingNode(t *testing.T) {
	tests := []struct {
		name       string
		components string
		want       bool
	}{
		{"2.5 image", `{image: "milvusdb/milvus:v2.5.10"}`, false},
		{"2.6 image", `{image: "milvusdb/milvus:v2.6.3"}`, true},
		{"no image: the operator's default image is 2.6", `{}`, true},
		{"version wins over the image", `{image: "milvusdb/milvus:v2.5.10", version: "2.6.0"}`, true},
		{"version 2.5 with a 2.6 image", `{image: "milvusdb/milvus:v2.6.1", version: "v2.5.4"}`, false},
		{"master- tag", `{image: "milvusdb/milvus-dev:master-latest"}`, true},
		{"3.0 image", `{image: "milvusdb/milvus:v3.0.0-beta"}`, true},
		// isImageVersionGreaterThan2_6 (the operator with Cdc) reads the part after the last ":".
		{"registry with a port: the tag after it is read", `{image: "registry:5000/milvusdb/milvus:v2.6.1"}`, true},
		{"registry with a port and a 2.5 tag", `{image: "registry:5000/milvusdb/milvus:v2.5.10"}`, false},
		{"registry with a port and no tag", `{image: "registry:5000/milvusdb/milvus"}`, false},
		// semver.ParseTolerant drops a lower-case "v" only.
		{"upper-case V is no version", `{image: "milvusdb/milvus:V2.6.1"}`, false},
		{"version with upper-case V is no version", `{image: "milvusdb/milvus:v2.6.1", version: "V2.6.1"}`, false},
		{"tag that is no version", `{image: "milvusdb/milvus:latest"}`, false},
		{"empty tag", `{image: "milvusdb/milvus:"}`, false},
		{"tag of a prerelease only", `{image: "milvusdb/milvus:-rc1"}`, false},
		{"2.5 with streamingNode given", `{image: "milvusdb/milvus:v2.5.10", streamingNode: {replicas: 2}}`, true},
		{"2.5 with streamingMode true", `{image: "milvusdb/milvus:v2.5.10", streamingMode: true}`, true},
		{"2.5 with streamingMode false and streamingNode given", `{image: "milvusdb/milvus:v2.5.10", streamingMode: false, streamingNode: {}}`, false},
		{"2.6 with streamingMode false: the version decides", `{image: "milvusdb/milvus:v2.6.0", streamingMode: false}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, milvus("  mode: cluster\n  components: "+tt.components+"\n"+noMilvusDependencies, "")))
			if got := slices.Contains(componentNames(a), "streamingNode"); got != tt.want {
				t.Errorf("streamingNode runs: %v, want %v (components %v)", got, tt.want, componentNames(a))
			}
		})
	}
	// A standalone Milvus 2.6 streams inside its one pod.
	a := analyzeBuiltin(t, mustParseObject(t, milvus("  components: {image: milvusdb/milvus:v2.6.3}\n"+noMilvusDependencies, "")))
	if got := componentNames(a); !slices.Equal(got, []string{"standalone"}) {
		t.Errorf("standalone 2.6 components %v, want [standalone]", got)
	}
}

// TestBuiltinMilvusComponents: from Milvus 2.6 on, a cluster runs proxy, mixCoord, dataNode, queryNode and
// streamingNode (Milvus2_6Components): index building moved into the data nodes and the coordinators into
// mixCoord. Before, indexNode runs too, and separate coordinators when the user names one.
func TestBuiltinMilvusComponents(t *testing.T) {
	tests := []struct {
		name       string
		components string
		want       []string
	}{
		{"2.5", `{image: "milvusdb/milvus:v2.5.10"}`, []string{"proxy", "mixCoord", "dataNode", "queryNode", "indexNode"}},
		{"2.5 with a root coordinator", `{image: "milvusdb/milvus:v2.5.10", rootCoord: {}}`,
			[]string{"proxy", "rootCoord", "dataCoord", "queryCoord", "indexCoord", "dataNode", "queryNode", "indexNode"}},
		{"2.6", `{image: "milvusdb/milvus:v2.6.3"}`, []string{"proxy", "mixCoord", "dataNode", "queryNode", "streamingNode"}},
		{"2.6 with a root coordinator and an indexNode", `{image: "milvusdb/milvus:v2.6.3", rootCoord: {}, indexNode: {replicas: 2}}`,
			[]string{"proxy", "mixCoord", "dataNode", "queryNode", "streamingNode"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, milvus("  mode: cluster\n  components: "+tt.components+"\n"+noMilvusDependencies, "")))
			if got := componentNames(a); !slices.Equal(got, tt.want) {
				t.Errorf("components %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBuiltinMilvusDependencies: the operator installs etcd, MinIO and the message queue in the cluster unless
// marked external, with the chart defaults under the user's values (DefaultDependencies).
func TestBuiltinMilvusDependencies(t *testing.T) {
	const v25 = "  components: {image: milvusdb/milvus:v2.5.10}\n"
	tests := []struct {
		name     string
		spec     string
		pods     int64
		requests map[string]string
	}{
		{"standalone: etcd 1 and MinIO standalone 1 (2Gi) beside it; rocksmq runs inside", `  mode: standalone
`, 3, map[string]string{"memory": "2Gi"}},
		{"cluster: etcd 3, MinIO distributed 4 x 2Gi, the pulsar-v3 chart's 11 pods", "  mode: cluster\n" + v25,
			// 5 Milvus; pulsar zookeeper 3 x 200m/256Mi, bookkeeper 3 x 500m/2Gi, autorecovery 100m/128Mi,
			// broker 2 x 500m/2Gi, proxy 2 x 500m/1Gi
			5 + 3 + 4 + 11, map[string]string{"cpu": "4200m", "memory": "21376Mi"}},
		{"pulsar-v2 chart, autorecovery off, 2 brokers", "  mode: cluster\n" + v25 + `  dependencies:
    etcd: {external: true}
    storage: {external: true}
    pulsar: {inCluster: {chartVersion: pulsar-v2, values: {components: {autorecovery: false}, broker: {replicaCount: 2}}}}
`, 5 + 3 + 3 + 2 + 1, map[string]string{"cpu": "7900m", "memory": "19Gi"}}, // zk 3 x 300m/1Gi, bk 3 x 1/2Gi, broker 2 x 1500m/4Gi, proxy 1/2Gi
		{"kafka without zookeeper, values resources", "  mode: cluster\n" + v25 + `  dependencies:
    etcd: {external: true}
    storage: {external: true}
    msgStreamType: kafka
    kafka: {inCluster: {values: {replicaCount: 2, resources: {requests: {cpu: "2", memory: 8Gi}}, zookeeper: {enabled: false}}}}
`, 5 + 2, map[string]string{"cpu": "4", "memory": "16Gi"}},
		{"kafka with its zookeeper: 3 x 250m/256Mi, merged with values", "  mode: cluster\n" + v25 + `  dependencies:
    etcd: {external: true}
    storage: {external: true}
    msgStreamType: kafka
    kafka: {inCluster: {values: {replicaCount: 1, zookeeper: {replicaCount: 1, resources: {requests: {memory: 1Gi}}}}}}
`, 5 + 1 + 1, map[string]string{"cpu": "250m", "memory": "1Gi"}},
		{"everything external, woodpecker inside Milvus", "  mode: cluster\n" + v25 + `  dependencies:
    etcd: {external: true, endpoints: [etcd:2379]}
    storage: {external: true, type: S3}
    msgStreamType: woodpecker
`, 5, map[string]string{}},
		{"MinIO distributed 2 x 2 zones, its cpu merged over the default memory; etcd replicaCount 0", `  mode: standalone
  dependencies:
    etcd: {inCluster: {values: {replicaCount: 0}}}
    storage: {inCluster: {values: {mode: distributed, replicas: 2, zones: 2, resources: {requests: {cpu: "1"}}}}}
`, 1 + 4, map[string]string{"cpu": "4", "memory": "8Gi"}},
		{"tei: replicaCount pods with the values' resources", `  mode: standalone
  dependencies:
    etcd: {external: true}
    storage: {external: true}
    tei: {enabled: true, inCluster: {values: {replicaCount: 2, resources: {requests: {cpu: "4", memory: 16Gi}}}}}
`, 1 + 2, map[string]string{"cpu": "8", "memory": "32Gi"}},
		{"tei not enabled", `  mode: standalone
  dependencies:
    etcd: {external: true}
    storage: {external: true}
    tei: {inCluster: {values: {replicaCount: 2}}}
`, 1, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkTotals(t, analyzeBuiltin(t, mustParseObject(t, milvus(tt.spec, ""))), tt.pods, tt.requests)
		})
	}
}

// TestBuiltinMilvusDependencyPlacement: a dependency's pods take the nodeSelector and tolerations of its own
// chart values, not those of spec.components.
func TestBuiltinMilvusDependencyPlacement(t *testing.T) {
	a := analyzeBuiltin(t, mustParseObject(t, milvus(`  components: {nodeSelector: {pool: milvus}}
  dependencies:
    etcd: {inCluster: {values: {replicaCount: 3, nodeSelector: {pool: etcd}, tolerations: [{key: etcd, operator: Exists}]}}}
`, "")))
	byName := map[string]ComponentInstance{}
	for _, c := range a.Components {
		byName[c.Name+"/"+c.Instance] = c
	}
	if etcd := byName["dependencies/etcd"]; etcd.Pods != 3 || etcd.NodeSelector["pool"] != "etcd" || len(etcd.Tolerations) != 1 {
		t.Errorf("etcd: %d pods, nodeSelector %v, tolerations %v; want 3 on pool etcd with one toleration", etcd.Pods, etcd.NodeSelector, etcd.Tolerations)
	}
	if minio := byName["dependencies/minio"]; len(minio.NodeSelector) != 0 {
		t.Errorf("MinIO nodeSelector %v, want none", minio.NodeSelector)
	}
	if s := byName["standalone/"]; s.NodeSelector["pool"] != "milvus" {
		t.Errorf("standalone nodeSelector %v, want pool milvus", s.NodeSelector)
	}
}

// TestBuiltinMilvusDeploymentGroups: proxy, dataNode, queryNode and streamingNode may be split into deployment
// groups, one Deployment each with its own replicas and node constraints over the component's.
func TestBuiltinMilvusDeploymentGroups(t *testing.T) {
	a := analyzeBuiltin(t, mustParseObject(t, milvus(`  mode: cluster
  components:
    image: milvusdb/milvus:v2.6.3
    nodeSelector: {pool: milvus}
    queryNode:
      replicas: 9
      tolerations: [{key: gpu, operator: Exists}]
      resources: {requests: {cpu: "8"}}
      groups:
      - {name: az1, replicas: 2, nodeSelector: {zone: a}}
      - {name: az2, replicas: 3, tolerations: []}
      - {name: hpa, replicas: -1}
    streamingNode:
      groups: [{name: rg-a}]
`+noMilvusDependencies, "")))
	type want struct {
		pods        int64
		zone, pool  string
		tolerations int
	}
	wants := map[string]want{
		"queryNode/az1":      {2, "a", "", 1},
		"queryNode/az2":      {3, "", "milvus", 0},
		"queryNode/hpa":      {1, "", "milvus", 1},
		"streamingNode/rg-a": {1, "", "milvus", 0},
		"proxy/proxy":        {1, "", "milvus", 0},
		"dataNode/datanode":  {1, "", "milvus", 0},
		"mixCoord/":          {1, "", "milvus", 0},
	}
	got := map[string]bool{}
	for _, c := range a.Components {
		key := c.Name + "/" + c.Instance
		got[key] = true
		w, ok := wants[key]
		if !ok {
			t.Errorf("unexpected component %s", key)
			continue
		}
		if c.Pods != w.pods || c.NodeSelector["zone"] != w.zone || c.NodeSelector["pool"] != w.pool || len(c.Tolerations) != w.tolerations {
			t.Errorf("%s: %d pods, nodeSelector %v, %d tolerations; want %+v", key, c.Pods, c.NodeSelector, len(c.Tolerations), w)
		}
	}
	for key := range wants {
		if !got[key] {
			t.Errorf("no component %s", key)
		}
	}
	checkTotals(t, a, 10, map[string]string{"cpu": "48"}) // queryNode 2 + 3 + 1 pods of 8 CPUs, four more pods
}

// TestBuiltinMilvusStatus: MilvusReady says running or initializing; status.status Unhealthy (Milvus was up and
// a component no longer is) is degraded.
func TestBuiltinMilvusStatus(t *testing.T) {
	tests := []struct {
		status string
		want   Phase
	}{
		{`{status: Pending}`, PhaseInitializing},
		{`{status: Pending, conditions: [{type: MilvusReady, status: "False"}]}`, PhaseInitializing},
		{`{status: Healthy, conditions: [{type: MilvusReady, status: "True"}]}`, PhaseRunning},
		{`{status: Unhealthy, conditions: [{type: MilvusReady, status: "False"}]}`, PhaseDegraded},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			if got := analyzeBuiltin(t, mustParseObject(t, milvus("  mode: standalone\n", tt.status))).Status; got != tt.want {
				t.Errorf("status %s, want %s", got, tt.want)
			}
		})
	}
}

// TestBuiltinDynamoV1beta1: a v1beta1 DynamoGraphDeployment lists its components, each with a plain pod template
// whose containers and init containers are the pod's; replicas groups of multinode.nodeCount pods each.
func TestBuiltinDynamoV1beta1(t *testing.T) {
	obj := mustParseObject(t, `apiVersion: nvidia.com/v1beta1
kind: DynamoGraphDeployment
metadata: {name: dgd, namespace: ml}
spec:
  components:
  - name: Frontend
    type: frontend
    podTemplate: {spec: {containers: [{name: main, image: img}]}}
  - name: decode
    type: decode
    replicas: 2
    multinode: {nodeCount: 4}
    roles: [{name: leader}, {name: worker}]
    podTemplate:
      spec:
        nodeSelector: {gpu: h100}
        initContainers: [{name: runtime, image: rt, restartPolicy: Always, resources: {requests: {cpu: "1", memory: 1Gi}}}]
        containers: [{name: main, image: img, resources: {requests: {cpu: "8"}, limits: {nvidia.com/gpu: "8"}}}]
  - name: prefill
    type: prefill
    multinode: {}
    podTemplate: {spec: {containers: [{name: main, image: img, resources: {limits: {nvidia.com/gpu: "2"}}}]}}
  - name: legacy
status: {state: initializing}
`)
	a := analyzeBuiltin(t, obj)
	// Frontend 1; decode 2 x 4 pods of 9 CPUs, 1Gi, 8 GPUs (the sidecar init container runs beside main);
	// prefill 1 x 2 pods of 2 GPUs; legacy 1 pod asking for nothing.
	checkTotals(t, a, 1+8+2+1, map[string]string{"cpu": "72", "memory": "8Gi", "nvidia.com/gpu": "68"})
	if a.Status != PhaseInitializing {
		t.Errorf("status %s, want Initializing", a.Status)
	}
	for _, c := range a.Components {
		if c.Instance == "decode" && c.NodeSelector["gpu"] != "h100" {
			t.Errorf("decode nodeSelector %v, want gpu: h100", c.NodeSelector)
		}
	}
}

// TestBuiltinNIMServiceCacheGPUs: given a NIMCache and an explicit profile but no GPU in its resources and no DRA
// claims, the NIM operator puts GPUs on the pod (addGPUResources): the tensor parallelism on multi-node, the
// profile's (at least one) otherwise.
func TestBuiltinNIMServiceCacheGPUs(t *testing.T) {
	tests := []struct {
		name     string
		spec     string
		pods     int64
		requests map[string]string
	}{
		{"profile, no resources: one GPU", `
  storage: {nimCache: {name: llama, profile: 4f9fe3a5}}`, 1, map[string]string{"nvidia.com/gpu": "1"}},
		{"profile, cpu and memory only: one GPU beside them", `
  replicas: 2
  storage: {nimCache: {name: llama, profile: 4f9fe3a5}}
  resources: {requests: {cpu: "4", memory: 16Gi}}`, 2, map[string]string{"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "2"}},
		{"multi-node: tensor parallelism GPUs in each of pipeline pods", `
  storage: {nimCache: {name: deepseek, profile: 4f9fe3a5}}
  multiNode: {parallelism: {pipeline: 2, tensor: 8}}`, 2, map[string]string{"nvidia.com/gpu": "16"}},
		{"GPUs given in limits are kept", `
  storage: {nimCache: {name: llama, profile: 4f9fe3a5}}
  resources: {limits: {nvidia.com/gpu: "4"}}`, 1, map[string]string{"nvidia.com/gpu": "4"}},
		{"no profile: NIM picks one at start, the operator assigns nothing", `
  storage: {nimCache: {name: llama, profile: ""}}`, 1, map[string]string{}},
		{"no NIMCache", `
  storage: {pvc: {name: models}}`, 1, map[string]string{}},
		{"DRA claims: the operator assigns no GPUs", `
  storage: {nimCache: {name: llama, profile: 4f9fe3a5}}
  draResources: [{resourceClaimTemplateName: gpus}]`, 1, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, "apiVersion: apps.nvidia.com/v1alpha1\nkind: NIMService\nmetadata: {name: nim, namespace: ai}\nspec:\n  image: {repository: nvcr.io/nim/meta/llama, tag: \"1.0\"}"+tt.spec+"\n")
			checkTotals(t, analyzeBuiltin(t, obj), tt.pods, tt.requests)
		})
	}
}

// TestBuiltinMilvusCDC: spec.components.cdc adds a cdc Deployment, one replica by default, in either mode, with
// the global resources as any component.
func TestBuiltinMilvusCDC(t *testing.T) {
	tests := []struct {
		name, spec string
		pods       int64
		requests   map[string]string
	}{
		{"standalone with cdc", "  components: {image: milvusdb/milvus:v2.6.6, resources: {requests: {cpu: \"2\"}}, cdc: {}}\n", 2, map[string]string{"cpu": "4"}},
		{"cluster with 2 cdc replicas", "  mode: cluster\n  components: {image: milvusdb/milvus:v2.6.6, cdc: {replicas: 2, resources: {requests: {memory: 1Gi}}}}\n", 5 + 2, map[string]string{"memory": "2Gi"}},
		{"no cdc", "  components: {image: milvusdb/milvus:v2.6.6}\n", 1, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkTotals(t, analyzeBuiltin(t, mustParseObject(t, milvus(tt.spec+noMilvusDependencies, ""))), tt.pods, tt.requests)
		})
	}
}
