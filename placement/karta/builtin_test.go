package karta

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func builtinRegistry(t testing.TB) *Registry {
	t.Helper()
	bs, err := Builtins()
	if err != nil {
		t.Fatal(err)
	}
	return NewRegistry(bs...)
}

func mustParseObject(t testing.TB, y string) map[string]any {
	t.Helper()
	obj, err := ParseObject([]byte(y), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func analyzeBuiltin(t testing.TB, obj map[string]any) *Analysis {
	t.Helper()
	c, ok := builtinRegistry(t).Lookup(GVKOf(obj))
	if !ok {
		t.Fatalf("no built-in RI for %v", GVKOf(obj))
	}
	if !c.Builtin {
		t.Errorf("%s: Builtin = false", c.Name)
	}
	a, err := c.Analyze(obj)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func checkTotals(t *testing.T, a *Analysis, pods int64, requests map[string]string) {
	t.Helper()
	if a.TotalPods != pods {
		t.Errorf("TotalPods = %d, want %d", a.TotalPods, pods)
	}
	got := Quantities(a.TotalRequests)
	if len(got) != len(requests) {
		t.Errorf("TotalRequests = %v, want %v", got, requests)
		return
	}
	for name, want := range requests {
		g, ok := a.TotalRequests[corev1.ResourceName(name)]
		if !ok || g.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("TotalRequests[%s] = %v, want %s (all: %v)", name, g.String(), want, got)
		}
	}
}

func TestBuiltinsCoverRequiredKinds(t *testing.T) {
	reg := builtinRegistry(t)
	for _, c := range reg.All() {
		if len(c.Warnings) > 0 {
			t.Errorf("built-in RI %s has fields the engine ignores: %v", c.Name, c.Warnings)
		}
	}
	for _, gvk := range []string{
		"ray.io/v1/RayCluster", "ray.io/v1/RayJob", "ray.io/v1/RayService", "kubeflow.org/v1/PyTorchJob",
		"kubeflow.org/v1/MPIJob", "kubeflow.org/v2beta1/MPIJob", "kubeflow.org/v1/TFJob", "kubeflow.org/v1/XGBoostJob",
		"kubeflow.org/v1/PaddleJob", "kubeflow.org/v1/JAXJob", "jobset.x-k8s.io/v1alpha2/JobSet",
		"leaderworkerset.x-k8s.io/v1/LeaderWorkerSet", "serving.kserve.io/v1beta1/InferenceService",
		"nvidia.com/v1alpha1/DynamoGraphDeployment", "apps.nvidia.com/v1alpha1/NIMService",
		"milvus.io/v1beta1/Milvus", "apps/v1/Deployment", "apps/v1/StatefulSet", "batch/v1/Job", "batch.volcano.sh/v1alpha1/Job",
	} {
		i := len(gvk) - 1
		for gvk[i] != '/' {
			i--
		}
		obj := map[string]any{"apiVersion": gvk[:i], "kind": gvk[i+1:]}
		if _, ok := reg.Lookup(GVKOf(obj)); !ok {
			t.Errorf("no built-in RI for %s", gvk)
		}
	}
}

// TestBuiltinCorpusSamples pins pod counts and total requests of real samples, each computed by hand
// from the sample and the framework's semantics (see the RI files for the fields).
func TestBuiltinCorpusSamples(t *testing.T) {
	tests := []struct {
		framework, sample string
		pods              int64
		requests          map[string]string
	}{
		// Head 500m/2Gi + small-group replicas 1 (in [1,10]) x 1 host x 500m/1Gi.
		{"kuberay", "raycluster-complete.yaml", 2, map[string]string{"cpu": "1", "memory": "3Gi"}},
		// Autoscaler sample: replicas 0, minReplicas 0: workers 0; head 1/2Gi plus the autoscaler
		// sidecar KubeRay adds (enableInTreeAutoscaling), 500m/512Mi: 1500m and 2560Mi.
		{"kuberay", "raycluster-autoscaler-v1.yaml", 1, map[string]string{"cpu": "1500m", "memory": "2560Mi"}},
		// Head only: requests 36 CPU, 144G, 4 GPUs.
		{"kuberay", "raycluster-verl-4gpu.yaml", 1, map[string]string{"cpu": "36", "memory": "144G", "nvidia.com/gpu": "4"}},
		// RayJob: head 8/40G, tpu-group replicas 1 x numOfHosts 4 x (24 CPU, 200G, 4 TPU), default
		// submitter 500m/200Mi: pods 1+4+1; cpu 8+96+0.5; memory 40G+800G+200Mi; tpu 16.
		{"kuberay", "rayjob-tpu-v6e-16-multihost.yaml", 6, map[string]string{"cpu": "104500m", "memory": "840209715200", "google.com/tpu": "16"}},
		// RayJob: head 1/8G + gpu-group 4 x (1 CPU, 8G, 1 GPU) + submitter 500m/200Mi.
		{"kuberay", "rayjob-pytorch-resnet-gpu-tolerations.yaml", 6, map[string]string{"cpu": "5500m", "memory": "40209715200", "nvidia.com/gpu": "4"}},
		// RayService: head 2/32Gi + gpu-group 2 x (24, 500Gi, 8 GPU); no submitter.
		{"kuberay", "rayservice-deepseek-gpu.yaml", 3, map[string]string{"cpu": "50", "memory": "1032Gi", "nvidia.com/gpu": "16"}},
		// PyTorchJob: Master 1 + Worker 1, each limits nvidia.com/gpu 1 (requests default to limits); the worker
		// runs the operator's init-pytorch init container first (50m, 10Mi).
		{"training-operator", "pytorchjob-mnist-gloo-gpu.yaml", 2, map[string]string{"nvidia.com/gpu": "2", "cpu": "50m", "memory": "10Mi"}},
		// Master 1 + Worker 3, no resources but each worker's init-pytorch (50m, 10Mi).
		{"training-operator", "pytorchjob-smoke-sendrecv-3-workers.yaml", 4, map[string]string{"cpu": "150m", "memory": "30Mi"}},
		// MPIJob v1: launcher 1 x (1, 2Gi) + workers 2 x (2, 4Gi), limits only; the launcher's kubectl-delivery
		// init container adds 5Gi of ephemeral storage.
		{"training-operator", "mpijob-tensorflow-mnist.yaml", 3, map[string]string{"cpu": "5", "memory": "10Gi", "ephemeral-storage": "5Gi"}},
		// JobSet: replicas 2 x min(parallelism 2, completions 2) x 500m.
		{"jobset", "jobset-topology-aware-scheduling.yaml", 4, map[string]string{"cpu": "2"}},
		// JobSet: driver 1 x 1 + workers 1 (default) x parallelism 4.
		{"jobset", "jobset-startup-policy-driver-ready.yaml", 5, map[string]string{}},
		// JobSet: initializer and launcher default to 1 pod each, worker 4.
		{"jobset", "jobset-depends-on.yaml", 6, map[string]string{}},
		// LWS: replicas 3 x size 4 = 12 pods; no leaderTemplate, so every pod is a worker-template pod (50m).
		{"lws", "lws-exclusive-placement.yaml", 12, map[string]string{"cpu": "600m"}},
		// LWS: 2 groups of 2 pods, each cpu 125 (request), memory 1124Gi, 8 GPUs, 800Gi ephemeral.
		{"lws", "lws-vllm-gpu.yaml", 4, map[string]string{"cpu": "500", "memory": "4496Gi", "nvidia.com/gpu": "32", "ephemeral-storage": "3200Gi"}},
		// KServe: predictor 1 (minReplicas) x sklearn (100m, 1Gi) + explainer 1 x alibi (100m, 1Gi).
		{"kserve", "isvc-sklearn-alibi-explainer.yaml", 2, map[string]string{"cpu": "200m", "memory": "2Gi"}},
		// KServe: huggingface model container requests 6 CPU, 24Gi, 1 GPU.
		{"kserve", "isvc-huggingface-llama2-gpu.yaml", 1, map[string]string{"cpu": "6", "memory": "24Gi", "nvidia.com/gpu": "1"}},
		// KServe: predictor (triton, no resources) + custom transformer container: 2 pods, each main container
		// given KServe's default requests of 1 cpu and 2Gi.
		{"kserve", "isvc-triton-torchscript-transformer.yaml", 2, map[string]string{"cpu": "2", "memory": "4Gi"}},
		// Dynamo: Frontend 1 + Decode 2 x gpu 1 + Prefill 1 x gpu 1 ("gpu" is nvidia.com/gpu).
		{"dynamo", "dgd-vllm-disagg-router.yaml", 4, map[string]string{"nvidia.com/gpu": "3"}},
		// Dynamo: three services of 1 replica; requests 16/10Gi, 16/20Gi/1, 16/20Gi/1.
		{"dynamo", "dgd-h200-disagg-profiling.yaml", 3, map[string]string{"cpu": "48", "memory": "50Gi", "nvidia.com/gpu": "2"}},
		// Dynamo operator sample without services: nothing to place.
		{"dynamo", "dgd-operator-sample.yaml", 0, map[string]string{}},
		// NIMService multi-node: replicas 1 x pipeline 2 pods, each 8 GPUs.
		{"nim-operator", "nimservice-multi-node.yaml", 2, map[string]string{"nvidia.com/gpu": "16"}},
		// NIMService: 2 replicas x limits nvidia.com/gpu 1.
		{"nim-operator", "nimservice-epp-2-replicas.yaml", 2, map[string]string{"nvidia.com/gpu": "2"}},
		// NIMService: requests 4 CPU, 6Gi, 1 GPU (requests win over limits).
		{"nim-operator", "nimservice-kserve-knative.yaml", 1, map[string]string{"cpu": "4", "memory": "6Gi", "nvidia.com/gpu": "1"}},
		// Milvus cluster of the operator's default image, 2.6: proxy, mixCoord, dataNode, queryNode, streamingNode,
		// and the in-cluster dependencies: etcd 1, MinIO standalone 1 (100Mi), kafka 1 and its zookeeper 1 (250m/256Mi).
		{"milvus-operator", "milvus-cluster-demo.yaml", 9, map[string]string{"cpu": "250m", "memory": "356Mi"}},
		// Milvus without mode: standalone, one pod, plus etcd 1, MinIO standalone 1 (2Gi), kafka 3 and
		// zookeeper 3 (250m/256Mi each).
		{"milvus-operator", "milvus-kafka.yaml", 9, map[string]string{"cpu": "750m", "memory": "2816Mi"}},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			checkTotals(t, analyzeBuiltin(t, loadCorpusSample(t, tt.framework, tt.sample)), tt.pods, tt.requests)
		})
	}
}

// A pod that asks for a negative quantity, a fraction of a GPU, more than its limit, or more than fleetflow
// counts, is refused by the analysis, naming the component and the field: the API would refuse the first three,
// no node has the last, and no capacity can be reserved for any (past int64, amounts wrap around to negative ones).
func TestUncountableQuantitiesAreRefused(t *testing.T) {
	tests := []struct {
		name, cr, want string
	}{
		{"pod template", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: neg, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch, resources: {requests: {cpu: "-4"}}}]}}}`,
			`component "worker"`},
		{"init container limit", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: neg, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Worker: {template: {spec: {initContainers: [{name: fetch, resources: {limits: {nvidia.com/gpu: "-1"}}}],
             containers: [{name: pytorch}]}}}`,
			`spec.pytorchReplicaSpecs.Worker.template.spec.initContainers[fetch].resources.limits[nvidia.com/gpu]: -1 is negative`},
		{"fragmented pod", `
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata: {name: neg, namespace: ml}
spec:
  services:
    Worker: {replicas: 1, resources: {requests: {cpu: "-2"}}}`,
			`resources.requests.cpu: -2 is negative`},
		{"past int64", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: neg, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, resources: {requests: {cpu: "9223372036854775807k"}}}]}}}`,
			`spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch].resources.requests.cpu: 9223372036854775807k is more than fleetflow counts (1T)`},
		{"past float64", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: neg, namespace: ml}
spec:
  template: {spec: {containers: [{name: web, resources: {limits: {memory: 1e400}}}]}}`,
			`spec.template.spec.containers[web].resources.limits.memory: 10e399 is more than fleetflow counts (1Pi)`},
		{"half a GPU", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: neg, namespace: ml}
spec:
  template: {spec: {containers: [{name: web, resources: {limits: {nvidia.com/gpu: "0.5"}}}]}}`,
			`spec.template.spec.containers[web].resources.limits[nvidia.com/gpu]: 500m is not a whole number`},
		{"a request above its limit", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: neg, namespace: ml}
spec:
  template: {spec: {containers: [{name: web, resources: {requests: {cpu: "8"}, limits: {cpu: "2"}}}]}}`,
			`spec.template.spec.containers[web].resources.requests.cpu: 8 is more than its limit 2`},
		{"a GPU request under its limit", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: neg, namespace: ml}
spec:
  template: {spec: {containers: [{name: web, resources: {requests: {nvidia.com/gpu: "1"}, limits: {nvidia.com/gpu: "2"}}}]}}`,
			`spec.template.spec.containers[web].resources.requests[nvidia.com/gpu]: 1 is not its limit 2`},
		// A quantity that does not parse is named by its field, not by the decoder's Go types and byte offsets.
		{"a quantity that does not parse", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: neg, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, resources: {requests: {cpu: lots}}}]}}}`,
			`spec.pytorchReplicaSpecs.Master.template.spec.containers[pytorch].resources.requests.cpu: "lots" is not a quantity: quantities must match`},
		{"an init container's limit that is an object", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: neg, namespace: ml}
spec:
  template: {spec: {initContainers: [{name: fetch, resources: {limits: {memory: {size: 2}}}}], containers: [{name: web}]}}`,
			`spec.template.spec.initContainers[fetch].resources.limits.memory: an object is not a quantity`},
		{"a pod overhead that does not parse", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: neg, namespace: ml}
spec:
  template: {spec: {overhead: {cpu: 1x}, containers: [{name: web}]}}`,
			`spec.template.spec.overhead.cpu: "1x" is not a quantity`},
	}
	reg := builtinRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, tt.cr)
			c, _ := reg.Lookup(GVKOf(obj))
			_, err := c.Analyze(obj)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "neg") {
				t.Fatalf("Analyze error %v, want one naming the object and %q", err, tt.want)
			}
		})
	}
}

// TestBuiltinTrainingOperatorKinds: the training-operator kinds read one pod component per replica type, each
// defaulting to 1 replica, all in one gang, and nothing while suspended.
func TestBuiltinTrainingOperatorKinds(t *testing.T) {
	const gpuWorker = `{template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]}}}`
	const cpuPod = `{template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1", memory: 2Gi}}}]}}}`
	tests := []struct {
		name, manifest string
		pods           int64
		requests       map[string]string
		components     []string
	}{
		{name: "TFJob with every replica type",
			// Chief 1 + Master 1 (defaulted) + PS 2 + Evaluator 1 pods of 1 CPU/2Gi, and 4 GPU workers.
			manifest: `{apiVersion: kubeflow.org/v1, kind: TFJob, metadata: {name: tf, namespace: ml}, spec: {tfReplicaSpecs: {
  Chief: {replicas: 1, template: ` + cpuPod[len("{template: "):] + `, Master: ` + cpuPod + `, PS: {replicas: 2, template: ` + cpuPod[len("{template: "):] + `,
  Worker: {replicas: 4, template: ` + gpuWorker[len("{template: "):] + `, Evaluator: ` + cpuPod + `}}}`,
			pods: 9, requests: map[string]string{"cpu": "5", "memory": "10Gi", "nvidia.com/gpu": "4"},
			components: []string{"chief", "master", "ps", "worker", "evaluator"}},
		{name: "suspended TFJob",
			manifest: `{apiVersion: kubeflow.org/v1, kind: TFJob, metadata: {name: tf, namespace: ml}, spec: {runPolicy: {suspend: true},
  tfReplicaSpecs: {Worker: {replicas: 4, template: ` + gpuWorker[len("{template: "):] + `}}}`,
			pods: 0, requests: map[string]string{}, components: []string{"worker"}},
		{name: "TFJob with replica types in lower case",
			// The operator's defaulting takes ps and worker for PS and Worker: 2 pods of 1 CPU/2Gi and one GPU worker.
			manifest: `{apiVersion: kubeflow.org/v1, kind: TFJob, metadata: {name: tf, namespace: ml}, spec: {tfReplicaSpecs: {
  ps: {replicas: 2, template: ` + cpuPod[len("{template: "):] + `, worker: ` + gpuWorker + `}}}`,
			pods: 3, requests: map[string]string{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
			components: []string{"ps", "worker"}},
		{name: "PyTorchJob with replica types in other cases",
			// The operator's defaulting takes master and WORKER for Master and Worker: 1 + 3 GPU pods, the workers
			// each with init-pytorch (50m, 10Mi) as there is a master.
			manifest: `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: ml}, spec: {pytorchReplicaSpecs: {
  master: ` + gpuWorker + `, WORKER: {replicas: 3, template: ` + gpuWorker[len("{template: "):] + `}}}`,
			pods: 4, requests: map[string]string{"nvidia.com/gpu": "4", "cpu": "150m", "memory": "30Mi"}, components: []string{"master", "worker"}},
		{name: "XGBoostJob",
			manifest: `{apiVersion: kubeflow.org/v1, kind: XGBoostJob, metadata: {name: xgb, namespace: ml}, spec: {xgbReplicaSpecs: {
  Master: ` + cpuPod + `, Worker: {replicas: 3, template: ` + cpuPod[len("{template: "):] + `}}}`,
			pods: 4, requests: map[string]string{"cpu": "4", "memory": "8Gi"}, components: []string{"master", "worker"}},
		{name: "PaddleJob without a master",
			manifest: `{apiVersion: kubeflow.org/v1, kind: PaddleJob, metadata: {name: paddle, namespace: ml}, spec: {
  elasticPolicy: {minReplicas: 1, maxReplicas: 4}, paddleReplicaSpecs: {Worker: {replicas: 2, template: ` + gpuWorker[len("{template: "):] + `}}}`,
			pods: 2, requests: map[string]string{"nvidia.com/gpu": "2"}, components: []string{"worker"}},
		{name: "JAXJob",
			manifest: `{apiVersion: kubeflow.org/v1, kind: JAXJob, metadata: {name: jax, namespace: ml}, spec: {jaxReplicaSpecs: {
  Worker: ` + gpuWorker + `}}}`,
			pods: 1, requests: map[string]string{"nvidia.com/gpu": "1"}, components: []string{"worker"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, tt.manifest))
			checkTotals(t, a, tt.pods, tt.requests)
			var names []string
			for _, ci := range a.Components {
				names = append(names, ci.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.components, ",") {
				t.Errorf("components %v, want %v", names, tt.components)
			}
			if len(a.GangGroups) != 1 {
				t.Fatalf("gang groups %+v, want one", a.GangGroups)
			}
			for _, name := range names {
				if !slices.ContainsFunc(a.GangGroups[0].Members, func(m GangMember) bool { return m.ComponentName == name }) {
					t.Errorf("component %s is not in the gang %+v", name, a.GangGroups[0])
				}
			}
		})
	}
}

// TestBuiltinVolcanoJob: a Volcano Job runs each task's replicas (none when left out), one instance per task
// named as Volcano's webhook names it, all in one gang, and its phase maps to fleetflow's status.
func TestBuiltinVolcanoJob(t *testing.T) {
	const job = `{apiVersion: batch.volcano.sh/v1alpha1, kind: Job, metadata: {name: vc, namespace: ml}, spec: {minAvailable: 3, tasks: [
  {name: ps, replicas: 1, template: {spec: {containers: [{name: ps, resources: {requests: {cpu: "2", memory: 4Gi}}}]}}},
  {replicas: 2, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "2"}}}]}}},
  {name: idle, template: {spec: {containers: [{name: i, resources: {requests: {cpu: "8"}}}]}}}]}`
	// ps 1 x 2 CPU/4Gi + default1 2 x 2 GPUs + idle 0 (no replicas).
	a := analyzeBuiltin(t, mustParseObject(t, job+`}`))
	checkTotals(t, a, 3, map[string]string{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "4"})
	var instances []string
	for _, ci := range a.Components {
		instances = append(instances, ci.Name+"/"+ci.Instance)
	}
	if strings.Join(instances, ",") != "task/ps,task/default1,task/idle" {
		t.Errorf("instances %v, want task/ps, task/default1 and task/idle", instances)
	}
	if len(a.GangGroups) != 1 {
		t.Errorf("gang groups %+v, want the whole job as one", a.GangGroups)
	}
	// Aborted is the suspended state (vcctl job suspend; resumable), not a failure.
	for phase, want := range map[string]Phase{"Pending": PhaseInitializing, "Running": PhaseRunning, "Completing": PhaseRunning,
		"Completed": PhaseCompleted, "Failed": PhaseFailed, "Aborted": PhaseUndefined, "Terminated": PhaseFailed} {
		got := analyzeBuiltin(t, mustParseObject(t, job+`, status: {state: {phase: `+phase+`}}}`)).Status
		if got != want {
			t.Errorf("phase %s: status %s, want %s", phase, got, want)
		}
	}
}

// TestTemplatesKeepTopologySpreadConstraints: the pod template an analysis hands the placer keeps the
// template's topology spread constraints, which the scheduler applies.
func TestTemplatesKeepTopologySpreadConstraints(t *testing.T) {
	a := analyzeBuiltin(t, mustParseObject(t, `{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: j, namespace: ml},
  spec: {pytorchReplicaSpecs: {Worker: {replicas: 4, template: {metadata: {labels: {app: train}}, spec: {
    containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}],
    topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule,
      labelSelector: {matchLabels: {app: train}}}]}}}}}}`))
	if len(a.Components) != 1 || a.Components[0].PodTemplate == nil {
		t.Fatalf("components %+v, want the worker with its template", a.Components)
	}
	tscs := a.Components[0].PodTemplate.Spec.TopologySpreadConstraints
	if len(tscs) != 1 || tscs[0].TopologyKey != "kubernetes.io/hostname" || tscs[0].MaxSkew != 1 {
		t.Errorf("topology spread constraints %+v, want the template's", tscs)
	}
}

// TestBuiltinMilvusNodeConstraints: a Milvus component takes each node constraint of spec.components as a
// whole unless it sets its own (the operator's MergeComponentSpec): its own affinity replaces the global one,
// required node affinity and all, and an empty nodeSelector or tolerations list counts as unset.
func TestBuiltinMilvusNodeConstraints(t *testing.T) {
	a := analyzeBuiltin(t, mustParseObject(t, `apiVersion: milvus.io/v1beta1
kind: Milvus
metadata: {name: m, namespace: db}
spec:
  mode: cluster
  components:
    nodeSelector: {pool: milvus}
    tolerations: [{key: dedicated, operator: Exists}]
    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}
    queryNode:
      nodeSelector: {}
      tolerations: []
      affinity: {podAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}
    dataNode:
      nodeSelector: {pool: data}
      tolerations: [{key: data, operator: Exists}, {key: ssd, operator: Exists}]
`))
	tests := []struct {
		component    string
		pool         string
		tolerations  int
		zoneAffinity bool
	}{
		{"proxy", "milvus", 1, true},
		{"queryNode", "milvus", 1, false},
		{"dataNode", "data", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.component, func(t *testing.T) {
			i := slices.IndexFunc(a.Components, func(c ComponentInstance) bool { return c.Name == tt.component })
			if i < 0 {
				t.Fatalf("no component %s in %+v", tt.component, a.Components)
			}
			ci := a.Components[i]
			if ci.NodeSelector["pool"] != tt.pool || len(ci.Tolerations) != tt.tolerations {
				t.Errorf("nodeSelector %v and %d tolerations, want pool %s and %d", ci.NodeSelector, len(ci.Tolerations), tt.pool, tt.tolerations)
			}
			if got := ci.RequiredNodeAffinity != nil; got != tt.zoneAffinity {
				t.Errorf("required node affinity %+v, want one: %v", ci.RequiredNodeAffinity, tt.zoneAffinity)
			}
		})
	}
}

// TestBuiltinRayClusterStatus: KubeRay retries a pod it failed to create or delete, so ReplicaFailure
// makes a cluster degraded, not failed; a cluster that reports only conditions (status.state is deprecated) is
// running once provisioned with its head ready.
func TestBuiltinRayClusterStatus(t *testing.T) {
	tests := []struct {
		name, status string
		want         Phase
	}{
		{"ready state", `{state: ready}`, PhaseRunning},
		{"failed state", `{state: failed}`, PhaseFailed},
		{"pod creation failed, retried", `{state: ready, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreateWorkerPod}]}`, PhaseDegraded},
		{"conditions only, provisioned and head ready", `{conditions: [{type: RayClusterProvisioned, status: "True"}, {type: HeadPodReady, status: "True"}]}`, PhaseRunning},
		{"conditions only, provisioned but head not ready", `{conditions: [{type: RayClusterProvisioned, status: "True"}, {type: HeadPodReady, status: "False"}]}`, PhaseUndefined},
		{"not provisioned yet", `{conditions: [{type: RayClusterProvisioned, status: "False"}, {type: HeadPodReady, status: "False"}]}`, PhaseInitializing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, `apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: rc}
spec:
  headGroupSpec: {template: {spec: {containers: [{name: head}]}}}
status: `+tt.status+"\n"))
			if a.Status != tt.want {
				t.Errorf("status %s, want %s", a.Status, tt.want)
			}
		})
	}
}
