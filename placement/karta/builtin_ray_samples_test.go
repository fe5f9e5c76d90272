package karta

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// The tests here check the built-in Ray RIs against what KubeRay v1.5.0's controllers do, as its own samples
// (ray-operator/config/samples) exercise them. The CRs are small hand-written ones of the same shapes.

// rayKind says where a Ray kind keeps its RayClusterSpec.
type rayKind struct {
	kind, clusterField string
}

var (
	rayClusterKind = rayKind{"RayCluster", ""}
	rayJobKind     = rayKind{"RayJob", "rayClusterSpec"}
	rayServiceKind = rayKind{"RayService", "rayClusterConfig"}
	rayKinds       = []rayKind{rayClusterKind, rayJobKind, rayServiceKind}
)

// rayCR builds a CR of kind k whose cluster has a head requesting headRequests and the given worker groups
// (see rayWorkerGroup); extraSpec is YAML added to the CR's spec, status its status (both may be empty).
func rayCR(k rayKind, headRequests string, groups []string, extraSpec, status string) string {
	var cluster strings.Builder
	fmt.Fprintf(&cluster, "headGroupSpec: {template: {spec: {containers: [{name: ray-head, resources: {requests: %s}}]}}}\n", headRequests)
	if len(groups) > 0 {
		fmt.Fprintf(&cluster, "workerGroupSpecs: [%s]\n", strings.Join(groups, ", "))
	}
	indent := "  "
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: ray.io/v1\nkind: %s\nmetadata: {name: sample, namespace: ml}\nspec:\n", k.kind)
	if k.clusterField != "" {
		fmt.Fprintf(&b, "  %s:\n", k.clusterField)
		indent = "    "
	}
	for _, line := range strings.Split(strings.TrimSuffix(cluster.String(), "\n"), "\n") {
		b.WriteString(indent + line + "\n")
	}
	if extraSpec != "" {
		b.WriteString("  " + strings.ReplaceAll(strings.TrimSuffix(extraSpec, "\n"), "\n", "\n  ") + "\n")
	}
	if status != "" {
		b.WriteString("status: " + status + "\n")
	}
	return b.String()
}

// rayWorkerGroup is a worker group of replicas pods whose Ray container has the given resources (a YAML map).
func rayWorkerGroup(name string, replicas int, resources string) string {
	return fmt.Sprintf("{groupName: %s, replicas: %d, template: {spec: {containers: [{name: ray-worker, resources: %s}]}}}",
		name, replicas, resources)
}

// TestBuiltinRayStatusFromKubeRay maps the statuses KubeRay v1.5.0 writes through the Ray RIs.
func TestBuiltinRayStatusFromKubeRay(t *testing.T) {
	tests := []struct {
		name   string
		kind   rayKind
		status string
		want   Phase
	}{
		// calculateStatus names the condition rayv1.RayClusterReplicaFailure, whose type string is "ReplicaFailure".
		{"raycluster pod creation failed, retried", rayClusterKind,
			`{state: ready, conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreateWorkerPod}, {type: RayClusterProvisioned, status: "True"}, {type: HeadPodReady, status: "True"}]}`,
			PhaseDegraded},
		{"raycluster pod creation failed before it was ready", rayClusterKind,
			`{conditions: [{type: ReplicaFailure, status: "True", reason: FailedCreateHeadPod}, {type: RayClusterProvisioned, status: "False"}, {type: HeadPodReady, status: "False"}]}`,
			PhaseDegraded},
		{"raycluster ready", rayClusterKind,
			`{state: ready, conditions: [{type: RayClusterProvisioned, status: "True"}, {type: HeadPodReady, status: "True"}]}`,
			PhaseRunning},
		// RayService: Ready=False is initializing until the initializing timeout runs out, a terminal failure
		// (markFailedOnInitializingTimeout), or degraded once the serve endpoints of a ready service went.
		{"rayservice initializing", rayServiceKind,
			`{conditions: [{type: Ready, status: "False", reason: Initializing}, {type: UpgradeInProgress, status: "False", reason: Initializing}]}`,
			PhaseInitializing},
		{"rayservice initializing timed out", rayServiceKind,
			`{conditions: [{type: Ready, status: "False", reason: InitializingTimeout}, {type: UpgradeInProgress, status: "False", reason: Initializing}]}`,
			PhaseFailed},
		{"rayservice lost its serve endpoints", rayServiceKind,
			`{conditions: [{type: Ready, status: "False", reason: ZeroServeEndpoints}, {type: UpgradeInProgress, status: "False", reason: NoPendingCluster}]}`,
			PhaseDegraded},
		{"rayservice ready", rayServiceKind,
			`{conditions: [{type: Ready, status: "True", reason: NonZeroServeEndpoints}, {type: UpgradeInProgress, status: "True", reason: BothActivePendingClustersExist}]}`,
			PhaseRunning},
		// RayJob: jobDeploymentStatus; New is the empty string.
		{"rayjob new", rayJobKind, `{jobDeploymentStatus: ""}`, PhaseUndefined},
		{"rayjob initializing", rayJobKind, `{jobDeploymentStatus: Initializing}`, PhaseInitializing},
		{"rayjob retrying after a failed attempt", rayJobKind, `{jobDeploymentStatus: Retrying, jobStatus: FAILED, failed: 1}`, PhaseInitializing},
		{"rayjob running", rayJobKind, `{jobDeploymentStatus: Running, jobStatus: RUNNING}`, PhaseRunning},
		{"rayjob complete", rayJobKind, `{jobDeploymentStatus: Complete, jobStatus: SUCCEEDED}`, PhaseCompleted},
		{"rayjob failed, no retries left", rayJobKind, `{jobDeploymentStatus: Failed, jobStatus: FAILED, reason: AppFailed}`, PhaseFailed},
		{"rayjob invalid", rayJobKind, `{jobDeploymentStatus: ValidationFailed, reason: ValidationFailed}`, PhaseFailed},
		{"rayjob suspended", rayJobKind, `{jobDeploymentStatus: Suspended}`, PhaseUndefined},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, rayCR(tt.kind, `{cpu: "1"}`, nil, "", tt.status))
			if got := analyzeBuiltin(t, obj).Status; got != tt.want {
				t.Errorf("%s status %s: phase %s, want %s", tt.kind.kind, tt.status, got, tt.want)
			}
		})
	}
}

// TestBuiltinRayWorkersWaitGCSReady: KubeRay's DefaultWorkerPodTemplate gives every worker the wait-gcs-ready
// init container (requests = limits = 200m CPU, 256Mi), which raises a worker asking for less. Many of
// KubeRay's samples have workers that request CPU only (ray-job.sample.yaml: 200m), whose pods request 256Mi.
func TestBuiltinRayWorkersWaitGCSReady(t *testing.T) {
	tests := []struct {
		name      string
		resources string
		want      map[string]string // the worker pod's requests
	}{
		{"cpu only, as KubeRay's samples", `{requests: {cpu: 200m}}`, map[string]string{"cpu": "200m", "memory": "256Mi"}},
		{"gpu only", `{limits: {nvidia.com/gpu: "1"}}`, map[string]string{"cpu": "200m", "memory": "256Mi", "nvidia.com/gpu": "1"}},
		{"memory only, below the init container's", `{requests: {memory: 128Mi}}`, map[string]string{"cpu": "200m", "memory": "256Mi"}},
		{"cpu and memory", `{requests: {cpu: "1", memory: 1G}}`, map[string]string{"cpu": "1", "memory": "1G"}},
		{"limits only, above the init container's", `{limits: {cpu: "2", memory: 4Gi}}`, map[string]string{"cpu": "2", "memory": "4Gi"}},
		{"tpu with cpu and memory", `{requests: {cpu: "24", memory: 200G, google.com/tpu: "4"}, limits: {google.com/tpu: "4"}}`,
			map[string]string{"cpu": "24", "memory": "200G", "google.com/tpu": "4"}},
	}
	for _, k := range rayKinds {
		for _, tt := range tests {
			t.Run(k.kind+"/"+tt.name, func(t *testing.T) {
				// HTTPMode: a RayJob without a submitter pod, so the totals are the cluster's.
				extra := ""
				if k == rayJobKind {
					extra = "submissionMode: HTTPMode"
				}
				a := analyzeBuiltin(t, mustParseObject(t, rayCR(k, `{cpu: 500m}`, []string{rayWorkerGroup("g", 2, tt.resources)}, extra, "")))
				var worker *ComponentInstance
				for i := range a.Components {
					switch c := &a.Components[i]; c.Name {
					case "worker":
						worker = c
					case "head":
						// The head has no such init container: it keeps its own 500m and no memory.
						if got := Quantities(c.PodRequests); len(got) != 1 || got["cpu"] != "500m" {
							t.Errorf("head requests %v, want cpu 500m only", got)
						}
					}
				}
				if worker == nil || worker.Pods != 2 {
					t.Fatalf("worker component %+v, want 2 pods", worker)
				}
				got := Quantities(worker.PodRequests)
				if len(got) != len(tt.want) {
					t.Fatalf("worker requests %v, want %v", got, tt.want)
				}
				for name, want := range tt.want {
					if !sameQuantity(got[name], want) {
						t.Errorf("worker requests %v, want %v", got, tt.want)
						break
					}
				}
			})
		}
	}
}

// sameQuantity tells whether two quantity strings are the same amount.
func sameQuantity(a, b string) bool {
	qa, errA := resource.ParseQuantity(a)
	qb, errB := resource.ParseQuantity(b)
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}

// TestBuiltinRayCorpusWorkerWithoutMemory reads KubeRay's own RayJob sample, whose worker requests 200m CPU and no
// memory: its pod requests the wait-gcs-ready init container's 256Mi.
func TestBuiltinRayCorpusWorkerWithoutMemory(t *testing.T) {
	// Head 1/2Gi + small-group 1 x (200m, init container's 256Mi) + default submitter 500m/200Mi.
	checkTotals(t, analyzeBuiltin(t, loadCorpusSample(t, "kuberay", "rayjob-sample.yaml")), 3,
		map[string]string{"cpu": "1700m", "memory": "2504Mi"})
}

// BenchmarkAnalyzeRayCluster64WorkersWithoutMemory is BenchmarkAnalyzeRayCluster64 with workers that request no
// memory, as many of KubeRay's samples do: each worker template gets the wait-gcs-ready init container added by
// jq, which the other benchmarks' workers (requesting CPU and memory) skip.
func BenchmarkAnalyzeRayCluster64WorkersWithoutMemory(b *testing.B) {
	obj := rayCluster64(b)
	for _, g := range obj["spec"].(map[string]any)["workerGroupSpecs"].([]any) {
		ray := g.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		delete(ray["resources"].(map[string]any)["requests"].(map[string]any), "memory")
	}
	// 64 workers x the init container's 256Mi, as their only memory request, beside the head's 32Gi.
	if got := analyzeBuiltin(b, obj).TotalRequests.Memory().String(); got != "48Gi" {
		b.Fatalf("memory requested %s, want 48Gi", got)
	}
	benchmarkBuiltinAnalysis(b, obj)
}
