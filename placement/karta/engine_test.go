package karta

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Own small CRs exercising the framework rules the corpus samples do not reach.
func TestBuiltinFrameworkRules(t *testing.T) {
	tests := []struct {
		name     string
		cr       string
		pods     int64
		requests map[string]string
	}{
		{"raycluster numOfHosts and clamping", `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc, namespace: ml}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "2"}}}]}}}
  workerGroupSpecs:
  # replicas 3 within [1, 5], 4 hosts each: 12 pods
  - {groupName: tpu, replicas: 3, minReplicas: 1, maxReplicas: 5, numOfHosts: 4,
     template: {spec: {containers: [{name: w, resources: {limits: {google.com/tpu: "4"}}}]}}}
  # replicas unset: KubeRay uses minReplicas 2
  - {groupName: cpu, minReplicas: 2, template: {spec: {containers: [{name: w, resources: {requests: {cpu: "1"}}}]}}}
  # replicas 9 above maxReplicas 3: clamped to 3
  - {groupName: big, replicas: 9, maxReplicas: 3, template: {spec: {containers: [{name: w, resources: {requests: {cpu: "1"}}}]}}}
  # suspended group: no pods
  - {groupName: paused, replicas: 5, suspend: true, template: {spec: {containers: [{name: w, resources: {requests: {cpu: "1"}}}]}}}
# No worker requests memory, so each also counts KubeRay's wait-gcs-ready init container (200m, 256Mi): 2.4 CPU
# more for the 12 TPU workers, which ask for no CPU, and 256Mi for each of the 17 workers.
`, 1 + 12 + 2 + 3, map[string]string{"cpu": "9400m", "memory": "4352Mi", "google.com/tpu": "48"}},
		{"suspended raycluster", `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  suspend: true
  headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "2"}}}]}}}
  workerGroupSpecs: [{groupName: g, replicas: 2, template: {spec: {containers: [{name: w}]}}}]
`, 0, map[string]string{}},
		{"suspended rayservice", `
apiVersion: ray.io/v1
kind: RayService
metadata: {name: rs}
spec:
  suspend: true
  rayClusterConfig:
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "2"}}}]}}}
    workerGroupSpecs: [{groupName: g, replicas: 2, template: {spec: {containers: [{name: w}]}}}]
`, 0, map[string]string{}},
		{"rayservice nested cluster", `
apiVersion: ray.io/v1
kind: RayService
metadata: {name: rs}
spec:
  rayClusterConfig:
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "1"}}}]}}}
    workerGroupSpecs: [{groupName: g, replicas: 2, numOfHosts: 2, template: {spec: {containers: [{name: w, resources: {requests: {nvidia.com/gpu: "1"}}}]}}}]
# 4 GPU-only workers, each counted at KubeRay's wait-gcs-ready init container (200m, 256Mi)
`, 5, map[string]string{"cpu": "1800m", "memory": "1Gi", "nvidia.com/gpu": "4"}},
		{"autoscaler sidecar with overridden resources", `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  enableInTreeAutoscaling: true
  autoscalerOptions: {resources: {requests: {cpu: "1", memory: 1Gi}}}
  headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "2", memory: 4Gi}}}]}}}
`, 1, map[string]string{"cpu": "3", "memory": "5Gi"}},
		{"raycluster history-server collector sidecar in the head and every worker", `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  historyServerOptions: {collectorOptions: {image: collector}}
  headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "1"}}}]}}}
  # 2 GPU-only workers: each pod also runs the collector's default 50m CPU and 64Mi, less than KubeRay's
  # wait-gcs-ready init container (200m, 256Mi) asks for before them
  workerGroupSpecs: [{groupName: g, replicas: 2, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "1"}}}]}}}]
`, 3, map[string]string{"cpu": "1450m", "memory": "576Mi", "nvidia.com/gpu": "2"}},
		{"rayjob collector sidecar with its own resources", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj}
spec:
  submissionMode: HTTPMode
  rayClusterSpec:
    historyServerOptions: {collectorOptions: {resources: {requests: {cpu: "1", memory: 1Gi}}}}
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "1"}}}]}}}
    workerGroupSpecs: [{groupName: g, replicas: 1, template: {spec: {containers: [{name: w, resources: {requests: {cpu: "2"}}}]}}}]
`, 2, map[string]string{"cpu": "5", "memory": "2Gi"}},
		{"rayservice collector sidecar", `
apiVersion: ray.io/v1
kind: RayService
metadata: {name: rs}
spec:
  rayClusterConfig:
    historyServerOptions: {collectorOptions: {}}
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "1"}}}]}}}
`, 1, map[string]string{"cpu": "1050m", "memory": "64Mi"}},
		{"rayjob in HTTP mode has no submitter pod", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj}
spec:
  submissionMode: HTTPMode
  rayClusterSpec:
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "1"}}}]}}}
`, 1, map[string]string{"cpu": "1"}},
		{"rayjob with a clusterSelector runs on that cluster: no Ray pods of its own, only the submitter", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj}
spec:
  clusterSelector: {ray.io/cluster: shared}
  rayClusterSpec:
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "4"}}}]}}}
    workerGroupSpecs: [{groupName: g, replicas: 2, template: {spec: {containers: [{name: w, resources: {requests: {nvidia.com/gpu: "1"}}}]}}}]
`, 1, map[string]string{"cpu": "500m", "memory": "200Mi"}},
		{"jobset completions bound parallelism", `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js}
spec:
  replicatedJobs:
  # replicas 3 x min(parallelism 4, completions 2) = 6
  - {name: a, replicas: 3, template: {spec: {parallelism: 4, completions: 2, template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}}}
  # defaults: replicas 1, parallelism 1
  - {name: b, template: {spec: {template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}}}
`, 7, map[string]string{"cpu": "7"}},
		{"lws leader template and size", `
apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: lws}
spec:
  replicas: 2
  leaderWorkerTemplate:
    size: 3
    leaderTemplate: {spec: {containers: [{name: l, resources: {requests: {cpu: "4"}}}]}}
    workerTemplate: {spec: {containers: [{name: w, resources: {requests: {nvidia.com/gpu: "8"}}}]}}
`, 2 + 4, map[string]string{"cpu": "8", "nvidia.com/gpu": "32"}},
		{"dynamo multinode, gpu key and custom resources", `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: dgd}
spec:
  services:
    # 2 replicas x nodeCount 4 = 8 pods of 8 GPUs and 1 RDMA device each
    Worker: {replicas: 2, multinode: {nodeCount: 4},
             resources: {limits: {gpu: "8", custom: {rdma/ib: "1"}}, requests: {cpu: "10"}}}
    # multinode without nodeCount: the CRD default of 2 nodes
    Other: {multinode: {}, resources: {requests: {cpu: "1"}}}
    # autoscaling is deprecated and ignored by the operator: replicas 7 run
    Frontend: {replicas: 7, autoscaling: {enabled: true, minReplicas: 3, maxReplicas: 9}}
`, 8 + 2 + 7, map[string]string{"cpu": "82", "nvidia.com/gpu": "64", "rdma/ib": "8"}},
		{"dynamographdeployment service resources over its main container's", `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: dgd}
spec:
  services:
    # the operator lays the service's resources over mainContainer's, key by key: 4 CPU, 2 GPUs, 10Gi each
    Worker: {replicas: 2, resources: {requests: {cpu: "4"}, limits: {gpu: "2"}},
             extraPodSpec: {mainContainer: {image: img, resources: {requests: {cpu: "1"}, limits: {ephemeral-storage: 10Gi}}}}}
`, 2, map[string]string{"cpu": "8", "nvidia.com/gpu": "4", "ephemeral-storage": "20Gi"}},
		{"dynamographdeployment init and sidecar containers of extraPodSpec", `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: dgd}
spec:
  services:
    # a pod needs max(init 8 CPU / 64Gi, main 10 CPU / 40Gi + sidecar 2 CPU / 4Gi) plus its overhead
    Worker:
      replicas: 2
      resources: {limits: {gpu: "2"}}
      extraPodSpec:
        overhead: {cpu: 500m}
        initContainers: [{name: download, image: dl, resources: {requests: {cpu: "8", memory: 64Gi}}}]
        containers: [{name: sidecar, image: proxy, resources: {requests: {cpu: "2", memory: 4Gi}}}]
        mainContainer: {image: dynamo, resources: {requests: {cpu: "10", memory: 40Gi}}}
`, 2, map[string]string{"cpu": "25", "memory": "128Gi", "nvidia.com/gpu": "4"}},
		{"milvus component sidecars and init containers", `
apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: mv}
spec:
  mode: cluster
  dependencies: {etcd: {external: true}, storage: {external: true}, pulsar: {external: true}}
  components:
    image: milvusdb/milvus:v2.5.10
    resources: {requests: {cpu: "1", memory: 4Gi}}
    # a queryNode pod needs max(init 16 CPU / 8Gi, main 8 CPU / 64Gi + sidecar 2 CPU / 2Gi) and a GPU
    queryNode:
      replicas: 2
      resources: {limits: {cpu: "8", memory: 64Gi, nvidia.com/gpu: "1"}}
      sidecars: [{name: exporter, image: exporter, resources: {requests: {cpu: "2", memory: 2Gi}}}]
      initContainers: [{name: warm, image: warm, resources: {requests: {cpu: "16", memory: 8Gi}}}]
`, 2 + 4, map[string]string{"cpu": "36", "memory": "148Gi", "nvidia.com/gpu": "2"}},
		{"job runs min(parallelism, completions) pods at once", `
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  parallelism: 4
  completions: 3
  template: {spec: {restartPolicy: Never, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}}
`, 3, map[string]string{"nvidia.com/gpu": "3"}},
		{"job without parallelism", `
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  completions: 5
  template: {spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: "2"}}}]}}
`, 1, map[string]string{"cpu": "2"}},
		{"suspended job", `
apiVersion: batch/v1
kind: Job
metadata: {name: job}
spec:
  suspend: true
  parallelism: 4
  template: {spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: "2"}}}]}}
`, 0, map[string]string{}},
		{"nimservice autoscaled multi-node", `
apiVersion: apps.nvidia.com/v1alpha1
kind: NIMService
metadata: {name: nim}
spec:
  replicas: 5
  resources: {limits: {nvidia.com/gpu: "8"}}
  multiNode: {parallelism: {pipeline: 2, tensor: 8}}
  scale: {enabled: true, hpa: {minReplicas: 2, maxReplicas: 4}}
`, 4, map[string]string{"nvidia.com/gpu": "32"}},
		{"pytorchjob suspended", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pj}
spec:
  runPolicy: {suspend: true}
  pytorchReplicaSpecs:
    Master: {template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: "1"}}}]}}}
`, 0, map[string]string{}},
		{"mpijob v2beta1 workers default to 0", `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mj}
spec:
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: l, resources: {requests: {cpu: "1"}}}]}}}
    Worker: {template: {spec: {containers: [{name: w, resources: {requests: {cpu: "4"}}}]}}}
`, 1, map[string]string{"cpu": "1"}},
		{"milvus separate coordinators and HPA proxy", `
apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: m}
spec:
  mode: cluster
  dependencies: {etcd: {external: true}, storage: {external: true}, pulsar: {external: true}}
  components:
    image: milvusdb/milvus:v2.5.10
    resources: {requests: {cpu: "1"}}
    proxy: {replicas: -1}
    rootCoord: {}
    queryNode: {replicas: 3, resources: {requests: {cpu: "4", memory: 8Gi}}}
`, 1 /*proxy*/ + 4 /*coords*/ + 1 /*dataNode*/ + 3 /*queryNode*/ + 1 /*indexNode*/, map[string]string{"cpu": "19", "memory": "24Gi"}},
		{"mpijob v1 with defaulted replicas", `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mj}
spec:
  mpiReplicaSpecs:
    # Launcher replicas default 1, Worker 3: launcher 1 CPU + 3 x (8 CPU, 2 GPUs); the launcher's
    # kubectl-delivery init container adds 512Mi and 5Gi of ephemeral storage (its 100m is under 1 CPU)
    Launcher: {template: {spec: {containers: [{name: l, resources: {requests: {cpu: "1"}}}]}}}
    Worker: {replicas: 3, template: {spec: {containers: [{name: w, resources: {requests: {cpu: "8"}, limits: {nvidia.com/gpu: "2"}}}]}}}
`, 4, map[string]string{"cpu": "25", "memory": "512Mi", "ephemeral-storage": "5Gi", "nvidia.com/gpu": "6"}},
		{"mpijob v1 workers default to none", `
apiVersion: kubeflow.org/v1
kind: MPIJob
metadata: {name: mj}
spec:
  mpiReplicaSpecs:
    # the training operator defaults Worker replicas to 0: the launcher alone
    Launcher: {template: {spec: {containers: [{name: l, resources: {requests: {cpu: "2", memory: 1Gi}}}]}}}
    Worker: {template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "8"}}}]}}}
`, 1, map[string]string{"cpu": "2", "memory": "1Gi", "ephemeral-storage": "5Gi"}},
		{"rayjob in sidecar mode runs its submitter in the head pod", `
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: rj}
spec:
  submissionMode: SidecarMode
  rayClusterSpec:
    headGroupSpec: {template: {spec: {containers: [{name: head, resources: {requests: {cpu: "2", memory: 4Gi}}}]}}}
# the head with KubeRay's ray-job-submitter container (500m, 200Mi); no submitter pod
`, 1, map[string]string{"cpu": "2500m", "memory": "4296Mi"}},
		{"mpijob v2beta1 with workers", `
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mj}
spec:
  mpiReplicaSpecs:
    Launcher: {replicas: 1, template: {spec: {containers: [{name: l, resources: {requests: {cpu: 500m}}}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: w, resources: {requests: {memory: 4Gi}}}]}}}
`, 3, map[string]string{"cpu": "500m", "memory": "8Gi"}},
		{"statefulset with init and sidecar containers", `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  replicas: 3
  template:
    spec:
      # per pod: max(app 1 + sidecar 500m, init 2 + earlier sidecar 500m) = 2500m CPU
      initContainers:
      - {name: proxy, restartPolicy: Always, resources: {requests: {cpu: 500m}}}
      - {name: warm, resources: {requests: {cpu: "2"}}}
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
`, 3, map[string]string{"cpu": "7500m"}},
		{"deployment", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  template: {spec: {containers: [{name: c, resources: {requests: {cpu: 250m}}}]}}
`, 1, map[string]string{"cpu": "250m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkTotals(t, analyzeBuiltin(t, mustParseObject(t, tt.cr)), tt.pods, tt.requests)
		})
	}
}

func TestScalableReplicasFieldPath(t *testing.T) {
	a := analyzeBuiltin(t, mustParseObject(t, `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec: {replicas: 4, template: {spec: {containers: [{name: c}]}}}
`))
	ci := a.Components[0]
	if !ci.Scalable || !reflect.DeepEqual(ci.ReplicasFieldPath, []string{"spec", "replicas"}) || ci.Pods != 4 {
		t.Errorf("got Scalable=%v path=%v pods=%d, want true [spec replicas] 4", ci.Scalable, ci.ReplicasFieldPath, ci.Pods)
	}
	if !reflect.DeepEqual(ci.PodTemplatePath, []string{"spec", "template"}) {
		t.Errorf("template path %v, want [spec template]", ci.PodTemplatePath)
	}
	// Karta's RayCluster RI reads .spec.workerGroupSpecs[].replicas: a plain path with an iterator,
	// so each instance gets its own element index.
	c := compileRI(t, `
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: ri}
spec:
  structureDefinition:
    rootComponent: {name: root, kind: {group: ray.io, version: v1, kind: RayCluster}}
    childComponents:
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.workerGroupSpecs[].template'}
      scaleDefinition: {replicasPath: '.spec.workerGroupSpecs[].replicas', maxReplicasPath: '.spec.workerGroupSpecs[] | (.maxReplicas // 1)'}
      instanceIdPath: '.spec.workerGroupSpecs[].groupName'
`)
	a, err := c.Analyze(mustParseObject(t, `
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  workerGroupSpecs:
  - {groupName: a, replicas: 2, template: {spec: {containers: [{name: c}]}}}
  - {groupName: b, template: {spec: {containers: [{name: c}]}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Components) != 2 {
		t.Fatalf("got %d instances, want 2", len(a.Components))
	}
	b := a.Components[1]
	if b.Instance != "b" || !reflect.DeepEqual(b.ReplicasFieldPath, []string{"spec", "workerGroupSpecs", "1", "replicas"}) {
		t.Errorf("instance %q path %v, want b [spec workerGroupSpecs 1 replicas]", b.Instance, b.ReplicasFieldPath)
	}
	if !reflect.DeepEqual(b.PodTemplatePath, []string{"spec", "workerGroupSpecs", "1", "template"}) {
		t.Errorf("instance b template path %v, want [spec workerGroupSpecs 1 template]", b.PodTemplatePath)
	}
	// Replicas null (unset) and no minReplicas: pods 1, as placement reserves.
	if b.Replicas != nil || b.Pods != 1 || b.MaxReplicas == nil || *b.MaxReplicas != 1 {
		t.Errorf("instance b: replicas %v pods %d max %v, want nil 1 1", b.Replicas, b.Pods, b.MaxReplicas)
	}
	for expr, want := range map[string]bool{
		".spec.replicas": true, ".spec.replicas // 1": true, `.spec["replicas"]`: true,
		".spec.a[].replicas // 1": false, "1": false, ".spec.replicas * 2": false, ".a[].b[].c": false,
		".spec.a[] | (.replicas // 1)": true,
	} {
		if got := parsePlainPath(expr) != nil; got != want {
			t.Errorf("parsePlainPath(%q) plain = %v, want %v", expr, got, want)
		}
	}
}

func compileRI(t testing.TB, y string) *Compiled {
	t.Helper()
	ris, err := ParseResourceInterfaces([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(ris[0], "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const riHeader = `
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: bad-ri}
spec:
  structureDefinition:
    rootComponent: {name: root, kind: {group: example.com, version: v1, kind: Thing}}
    childComponents:
`

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		child string
		want  []string
	}{
		{"invalid jq", `
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
      scaleDefinition: {replicasPath: '.spec.replicas |||'}`,
			[]string{`resource interface "bad-ri"`, `component "worker"`, "scaleDefinition.replicasPath", `".spec.replicas |||"`, "jq parse error"}},
		{"unknown jq function", `
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: 'nosuchfunc(.spec)'}`,
			[]string{`component "worker"`, "specDefinition.podTemplateSpecPath", "jq compile error"}},
		{"unknown owner", `
    - name: worker
      ownerRef: nobody
      specDefinition: {podTemplateSpecPath: '.spec.template'}`,
			[]string{`component "worker"`, "ownerRef", `"nobody"`}},
		{"two spec forms", `
    - name: worker
      specDefinition: {podTemplateSpecPath: '.a', podSpecPath: '.b'}`,
			[]string{`component "worker"`, "exclusive"}},
		{"metadata without podSpec", `
    - name: worker
      specDefinition: {podTemplateSpecPath: '.a', metadataPath: '.b'}`,
			[]string{"metadataPath", "podSpecPath"}},
		{"duplicate names", `
    - {name: worker, specDefinition: {podTemplateSpecPath: '.a'}}
    - {name: worker, specDefinition: {podTemplateSpecPath: '.b'}}`,
			[]string{"duplicate component name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ris, err := ParseResourceInterfaces([]byte(riHeader+tt.child), "bad.yaml")
			if err != nil {
				t.Fatal(err)
			}
			_, err = Compile(ris[0], "bad.yaml")
			var ce *CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a CompileError", err)
			}
			for _, part := range tt.want {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error %q lacks %q", err, part)
				}
			}
		})
	}
}

func TestParseErrorsNameFileAndLine(t *testing.T) {
	input := "apiVersion: optimization.nvidia.com/v1alpha1\nkind: ResourceInterface\n---\n" +
		"apiVersion: optimization.nvidia.com/v1alpha1\nkind: ResourceInterface\nspec:\n  a: [1, 2\n"
	_, err := ParseResourceInterfaces([]byte(input), "ris.yaml")
	var ye *YAMLError
	if !errors.As(err, &ye) {
		t.Fatalf("got %v, want YAMLError", err)
	}
	// The unclosed flow sequence opens on line 7 of the file and the parser fails at or after it.
	if ye.Source != "ris.yaml" || ye.Line < 7 {
		t.Errorf("got %s:%d, want ris.yaml line >= 7", ye.Source, ye.Line)
	}
	if _, err := ParseResourceInterfaces([]byte("apiVersion: v1\nkind: ConfigMap\n"), "cm.yaml"); err == nil {
		t.Error("a ConfigMap parsed as an RI")
	}
	ris, err := ParseResourceInterfaces([]byte(`{"apiVersion":"optimization.nvidia.com/v1alpha1","kind":"ResourceInterface","metadata":{"name":"j"}}`), "ri.json")
	if err != nil || len(ris) != 1 || ris[0].Name != "j" {
		t.Errorf("JSON RI: got %v, %v", ris, err)
	}
}

func TestRegistryOverrideAndRemoval(t *testing.T) {
	builtins, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	base := NewRegistry(builtins...)
	gvk := GVKOf(map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster"})
	builtin, _ := base.Lookup(gvk)
	user := compileRI(t, `
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: my-raycluster}
spec:
  structureDefinition:
    rootComponent: {name: rc, kind: {group: ray.io, version: v1, kind: RayCluster}}
`)
	withUser := base.With(user)
	if got, _ := withUser.Lookup(gvk); got != user {
		t.Errorf("user RI does not override the built-in: got %s", got.Name)
	}
	if got, _ := base.Lookup(gvk); got != builtin {
		t.Error("With changed the original registry")
	}
	if got, _ := withUser.Without("my-raycluster").Lookup(gvk); got != builtin {
		t.Errorf("after Without the built-in does not show again: got %v", got)
	}
	if n := len(withUser.All()); n != len(builtins)+1 {
		t.Errorf("All() has %d RIs, want %d", n, len(builtins)+1)
	}
}

func TestStatusMapping(t *testing.T) {
	reg := builtinRegistry(t)
	tests := []struct {
		name, cr string
		want     Phase
	}{
		{"pytorch running outranks created", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
status: {conditions: [{type: Created, status: "True"}, {type: Running, status: "True"}]}`, PhaseRunning},
		{"pytorch failed", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
status: {conditions: [{type: Created, status: "True"}, {type: Failed, status: "True"}]}`, PhaseFailed},
		{"no status", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob`, PhaseUndefined},
		{"raycluster ready by phase", `
apiVersion: ray.io/v1
kind: RayCluster
status: {state: ready}`, PhaseRunning},
		{"starting inferenceservice is initializing, not failed", `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
status: {conditions: [{type: Ready, status: "False"}, {type: PredictorReady, status: "False"}]}`, PhaseInitializing},
		{"inferenceservice failed", `
apiVersion: serving.kserve.io/v1beta1
kind: InferenceService
status: {conditions: [{type: Ready, status: "False"}, {type: PredictorReady, status: "False"},
  {type: PredictorConfigurationReady, status: "False"}, {type: RoutesReady, status: "False"}]}`, PhaseFailed},
		{"jobset running by expression", `
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
spec: {replicatedJobs: [{name: a, replicas: 2}]}
status: {replicatedJobsStatus: [{name: a, active: 2, ready: 2}]}`, PhaseRunning},
		{"deployment by expression", `
apiVersion: apps/v1
kind: Deployment
spec: {replicas: 2}
status: {readyReplicas: 2}`, PhaseRunning},
		{"job complete", `
apiVersion: batch/v1
kind: Job
status: {succeeded: 3, conditions: [{type: SuccessCriteriaMet, status: "True"}, {type: Complete, status: "True"}]}`, PhaseCompleted},
		{"job failed", `
apiVersion: batch/v1
kind: Job
status: {failed: 7, conditions: [{type: FailureTarget, status: "True"}, {type: Failed, status: "True"}]}`, PhaseFailed},
		{"job running", `
apiVersion: batch/v1
kind: Job
status: {active: 2, succeeded: 1}`, PhaseRunning},
		{"deployment progress deadline by reason", `
apiVersion: apps/v1
kind: Deployment
status: {conditions: [{type: Progressing, status: "False", reason: ProgressDeadlineExceeded}]}`, PhaseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, tt.cr)
			c, _ := reg.Lookup(GVKOf(obj))
			got, err := c.Phase(obj)
			if err != nil || got != tt.want {
				t.Errorf("Phase = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestFragmentedPodRules(t *testing.T) {
	c := compileRI(t, `
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: frag}
spec:
  structureDefinition:
    rootComponent:
      name: app
      kind: {group: example.com, version: v1, kind: App}
      specDefinition:
        fragmentedPodSpecDefinition:
          containersPath: .spec.containers
          containerPath: .spec.main
          resourcesPath: .spec.resources
          nodeSelectorPath: .spec.nodeSelector
          tolerationsPath: .spec.tolerations
          nodeAffinityPath: .spec.nodeAffinity
`)
	tests := []struct {
		name, spec string
		containers int
		cpu        string
	}{
		// The main container shares a name with one in containers: not added twice; the containers'
		// own requests win over resources.
		{"container already listed", `{containers: [{name: main, resources: {requests: {cpu: "1"}}}, {name: side, resources: {limits: {cpu: "2"}}}],
		   main: {name: main, resources: {requests: {cpu: "9"}}}, resources: {requests: {cpu: "5"}}}`, 2, "3"},
		// No container has requests or limits: resources is the pod's request.
		{"resources as pod request", `{containers: [{name: a}], main: {name: b}, resources: {limits: {cpu: "5"}}}`, 2, "5"},
		// Nothing but resources.
		{"only resources", `{resources: {requests: {cpu: 500m}}}`, 1, "500m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := c.Analyze(mustParseObject(t, "apiVersion: example.com/v1\nkind: App\nmetadata: {name: x}\nspec: "+tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			ci := a.Components[0]
			if n := len(ci.PodTemplate.Spec.Containers); n != tt.containers {
				t.Errorf("%d containers, want %d", n, tt.containers)
			}
			if got := ci.PodRequests.Cpu().String(); got != tt.cpu {
				t.Errorf("cpu = %s, want %s", got, tt.cpu)
			}
		})
	}
	a, err := c.Analyze(mustParseObject(t, `
apiVersion: example.com/v1
kind: App
spec:
  nodeSelector: {gpu: h100}
  tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
  nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	ci := a.Components[0]
	if ci.NodeSelector["gpu"] != "h100" || len(ci.Tolerations) != 1 || ci.RequiredNodeAffinity == nil ||
		ci.RequiredNodeAffinity.NodeSelectorTerms[0].MatchExpressions[0].Key != "zone" {
		t.Errorf("node constraints not carried: %+v %+v %+v", ci.NodeSelector, ci.Tolerations, ci.RequiredNodeAffinity)
	}
}

func TestAnalyzeRejectsBadValues(t *testing.T) {
	c := compileRI(t, riHeader+`
    - name: worker
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.groups[].template'}
      scaleDefinition: {replicasPath: '.spec.groups[].replicas'}
      instanceIdPath: '.spec.groups[].name'
`)
	tests := []struct{ name, spec, want string }{
		{"fractional replicas", `{groups: [{name: a, replicas: 1.5, template: {}}]}`, "not a whole replica count"},
		{"negative replicas", `{groups: [{name: a, replicas: -2, template: {}}]}`, "not a valid replica count"},
		{"template not an object", `{groups: [{name: a, template: 7}]}`, "not a PodTemplateSpec"},
		{"empty instance id", `{groups: [{name: "", template: {}}]}`, "instance id 0 is empty"},
		{"missing field iterated", `{}`, "cannot iterate over: null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Analyze(mustParseObject(t, "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t1, namespace: ns}\nspec: "+tt.spec))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "Thing ns/t1") {
				t.Errorf("got %v, want an error naming the CR and %q", err, tt.want)
			}
		})
	}
	if _, err := c.Analyze(map[string]any{"apiVersion": "other/v1", "kind": "Thing"}); err == nil {
		t.Error("analyzed a CR of another GVK")
	}
	// Values from client-go (int64) are accepted.
	a, err := c.Analyze(map[string]any{"apiVersion": "example.com/v1", "kind": "Thing", "spec": map[string]any{
		"groups": []any{map[string]any{"name": "a", "replicas": int64(3), "template": map[string]any{}}}}})
	if err != nil || a.TotalPods != 3 {
		t.Errorf("int64 replicas: %v, pods %v", err, a)
	}
	_ = corev1.ResourceCPU
}
