package karta

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"testing"

	"github.com/itchyny/gojq"

	"github.com/fleetflow/fleetflow/deploy/resourceinterfaces"
)

// batchBenchObjects are one object of each batch kind whose RI reads more than plain fields: a PyTorchJob with a
// master (its workers' init container), a LeaderWorkerSet under subgroup exclusive topology, a running JobSet
// under exclusive topology, and an MPI operator MPIJob.
var batchBenchObjects = []struct{ name, cr string }{
	{"PyTorchJob", `apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch, resources: {requests: {cpu: "4", memory: 16Gi}}}]}}}
    Worker: {replicas: 16, template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: "8"}}}]}}}
`},
	{"LeaderWorkerSet", `apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ml, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack}}
spec:
  replicas: 8
  leaderWorkerTemplate:
    size: 9
    subGroupPolicy: {subGroupSize: 4}
    workerTemplate: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "8"}}}]}}
`},
	{"JobSet", `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: rack}}
spec:
  replicatedJobs:
  - {name: driver, template: {spec: {template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}}}}
  - {name: workers, replicas: 8, template: {spec: {parallelism: 4, completions: 4,
      template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: "8"}}}]}}}}}
status:
  replicatedJobsStatus: [{name: driver, active: 1, ready: 1}, {name: workers, active: 8, ready: 8}]
`},
	{"MPIJob", `apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: mpi, namespace: ml}
spec:
  mpiReplicaSpecs:
    Launcher: {template: {spec: {containers: [{name: l, resources: {limits: {cpu: "1", memory: 1Gi}}}]}}}
    Worker: {replicas: 8, template: {spec: {containers: [{name: w, resources: {limits: {nvidia.com/gpu: "8"}}}]}}}
`},
}

// BenchmarkAnalyzeBatch measures one analysis of each object of batchBenchObjects with its precompiled built-in RI.
func BenchmarkAnalyzeBatch(b *testing.B) {
	for _, bo := range batchBenchObjects {
		b.Run(bo.name, func(b *testing.B) { benchmarkBuiltinAnalysis(b, mustParseObject(b, bo.cr)) })
	}
}

// TestBuiltinLWSSubgroupsOfOne: LWS's pod webhook (getSubGroupIndex) first asks whether size-1 is divisible by
// subGroupSize, and only then takes size as divisible; a subGroupSize of 1 passes both, so the leader shares the
// first worker's subgroup rather than having one of its own (a group of one is its leader alone).
func TestBuiltinLWSSubgroupsOfOne(t *testing.T) {
	lws := func(size, subGroupSize int, policy string) string {
		return fmt.Sprintf(`apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ns, annotations: {leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology: rack}}
spec:
  leaderWorkerTemplate:
    size: %d
    subGroupPolicy: {subGroupSize: %d%s}
    workerTemplate: {spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}}
`, size, subGroupSize, policy)
	}
	tests := []struct {
		name string
		cr   string
		want []string
	}{
		{"size 4, subgroups of 1", lws(4, 1, ""), []string{"rack: leader 1 + worker 1", "rack: worker 1", "rack: worker 1"}},
		{"size 1, subgroups of 1", lws(1, 1, ""), []string{"rack: leader 1"}},
		{"size 4, subgroups of 1, leader excluded", lws(4, 1, ", subGroupPolicyType: LeaderExcluded"),
			[]string{"rack: worker 1", "rack: worker 1", "rack: worker 1"}},
		{"size 4, subgroups of 2", lws(4, 2, ""), []string{"rack: leader 1 + worker 1", "rack: worker 2"}},
		{"size 5, subgroups of 2", lws(5, 2, ""), []string{"rack: leader 1 + worker 2", "rack: worker 2"}},
		{"size 4, subgroups of 4", lws(4, 4, ""), []string{"rack: leader 1 + worker 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unitsOf(analyzeBuiltin(t, mustParseObject(t, tt.cr)).ExclusiveUnits)
			if !slices.Equal(got, tt.want) {
				t.Errorf("units %q, want %q", got, tt.want)
			}
		})
	}
}

// TestBuiltinPyTorchJobInitContainer: with a Master, the training operator (setInitContainer) gives every worker
// pod the init-pytorch init container (requests 50m CPU and 10Mi), which runs before the worker's containers, so
// a worker counts the larger of the two; without a Master (an elastic job) it adds none, nor to the master.
func TestBuiltinPyTorchJobInitContainer(t *testing.T) {
	job := func(specs string) string {
		return "{apiVersion: kubeflow.org/v1, kind: PyTorchJob, metadata: {name: pt, namespace: ml}, spec: {pytorchReplicaSpecs: {" + specs + "}}}"
	}
	const gpuOnly = `{replicas: 2, template: {spec: {containers: [{name: pytorch, resources: {limits: {nvidia.com/gpu: "1"}}}]}}}`
	const cpuWorker = `{replicas: 2, template: {spec: {containers: [{name: pytorch, resources: {requests: {cpu: "2", memory: 4Gi}}}]}}}`
	const master = `{template: {spec: {containers: [{name: pytorch}]}}}`
	tests := []struct {
		name, cr       string
		master, worker map[string]string
	}{
		{"GPU-only workers with a master", job("Master: " + master + ", Worker: " + gpuOnly),
			map[string]string{}, map[string]string{"cpu": "50m", "memory": "10Mi", "nvidia.com/gpu": "1"}},
		{"master in lower case", job("master: " + master + ", Worker: " + gpuOnly),
			map[string]string{}, map[string]string{"cpu": "50m", "memory": "10Mi", "nvidia.com/gpu": "1"}},
		{"workers that ask for more", job("Master: " + master + ", Worker: " + cpuWorker),
			map[string]string{}, map[string]string{"cpu": "2", "memory": "4Gi"}},
		{"workers with a larger init container of their own", job("Master: " + master + `, Worker: {template: {spec: {
  initContainers: [{name: fetch, resources: {requests: {cpu: "1"}}}], containers: [{name: pytorch}]}}}`),
			map[string]string{}, map[string]string{"cpu": "1", "memory": "10Mi"}},
		{"elastic job without a master", job("Worker: " + gpuOnly), nil, map[string]string{"nvidia.com/gpu": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, tt.cr))
			want := map[string]map[string]string{"worker": tt.worker}
			if tt.master != nil {
				want["master"] = tt.master
			}
			if len(a.Components) != len(want) {
				t.Fatalf("components %+v, want %v", a.Components, want)
			}
			for _, ci := range a.Components {
				if got := Quantities(ci.PodRequests); !maps.Equal(got, want[ci.Name]) {
					t.Errorf("%s requests %v, want %v", ci.Name, got, want[ci.Name])
				}
			}
		})
	}
}

// batchPod is a pod as an operator labels it: its labels and annotations.
type batchPod struct {
	labels, annotations map[string]string
}

func (p batchPod) object() map[string]any {
	meta := map[string]any{}
	for field, m := range map[string]map[string]string{"labels": p.labels, "annotations": p.annotations} {
		values := map[string]any{}
		for k, v := range m {
			values[k] = v
		}
		meta[field] = values
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta}
}

// selects reports whether component's podSelector (its componentTypeSelector, as Karta reads pods) matches pod.
func selects(t *testing.T, ri *ResourceInterface, component string, pod batchPod) bool {
	t.Helper()
	for _, cd := range ri.Spec.StructureDefinition.ChildComponents {
		if cd.Name != component {
			continue
		}
		if cd.PodSelector == nil || cd.PodSelector.ComponentTypeSelector == nil {
			t.Fatalf("%s: component %s has no componentTypeSelector", ri.Name, component)
		}
		s := cd.PodSelector.ComponentTypeSelector
		q, err := gojq.Parse(s.KeyPath)
		if err != nil {
			t.Fatalf("%s: %s: keyPath: %v", ri.Name, component, err)
		}
		v, _ := q.Run(pod.object()).Next()
		if err, ok := v.(error); ok {
			t.Fatalf("%s: %s: keyPath: %v", ri.Name, component, err)
		}
		if s.Value == nil {
			return v != nil
		}
		return v == *s.Value
	}
	t.Fatalf("%s: no component %s", ri.Name, component)
	return false
}

// TestBuiltinBatchPodSelectors: each component's podSelector picks out, by the labels and annotations its
// operator sets, its own pods and none of the workload's other components' pods (Karta reads pods through them).
func TestBuiltinBatchPodSelectors(t *testing.T) {
	trainingPod := func(replicaType string) batchPod { // training-operator v1.8.1 (GenLabels, labels.SetReplicaType)
		return batchPod{labels: map[string]string{"training.kubeflow.org/operator-name": "pytorchjob-controller",
			"training.kubeflow.org/job-name": "j", "training.kubeflow.org/replica-type": replicaType,
			"training.kubeflow.org/replica-index": "0"}}
	}
	mpiPod := func(role string) batchPod { // mpi-operator v0.6.0 (defaultLabels)
		return batchPod{labels: map[string]string{"training.kubeflow.org/operator-name": "mpi-operator",
			"training.kubeflow.org/job-name": "j", "training.kubeflow.org/job-role": role}}
	}
	lwsLeader := batchPod{ // LWS v0.7.0: the leader StatefulSet's pods, labelled further by the pod webhook
		labels: map[string]string{"leaderworkerset.sigs.k8s.io/name": "l", "leaderworkerset.sigs.k8s.io/worker-index": "0",
			"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/group-key": "k"},
		annotations: map[string]string{"leaderworkerset.sigs.k8s.io/size": "4"}}
	lwsWorker := batchPod{ // a worker StatefulSet's pods
		labels: map[string]string{"leaderworkerset.sigs.k8s.io/name": "l", "leaderworkerset.sigs.k8s.io/worker-index": "1",
			"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/group-key": "k"},
		annotations: map[string]string{"leaderworkerset.sigs.k8s.io/size": "4", "leaderworkerset.sigs.k8s.io/leader-name": "l-0"}}
	tests := []struct {
		file string
		pods map[string]batchPod // by component
	}{
		{"mpijob-v2beta1.yaml", map[string]batchPod{"launcher": mpiPod("launcher"), "worker": mpiPod("worker")}},
		{"mpijob-v1.yaml", map[string]batchPod{"launcher": trainingPod("launcher"), "worker": trainingPod("worker")}},
		{"pytorchjob.yaml", map[string]batchPod{"master": trainingPod("master"), "worker": trainingPod("worker")}},
		{"tfjob.yaml", map[string]batchPod{"chief": trainingPod("chief"), "ps": trainingPod("ps"), "worker": trainingPod("worker")}},
		{"leaderworkerset.yaml", map[string]batchPod{"leader": lwsLeader, "worker": lwsWorker}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := fs.ReadFile(resourceinterfaces.FS, tt.file)
			if err != nil {
				t.Fatal(err)
			}
			ris, err := ParseResourceInterfaces(data, tt.file)
			if err != nil || len(ris) != 1 {
				t.Fatalf("parse %s: %d RIs, %v", tt.file, len(ris), err)
			}
			for component := range tt.pods {
				for owner, pod := range tt.pods {
					if got, want := selects(t, ris[0], component, pod), owner == component; got != want {
						t.Errorf("%s selects a %s pod (%v): %v, want %v", component, owner, pod.labels, got, want)
					}
				}
			}
		})
	}
}

// TestBuiltinJobSetStatus: JobSet v0.10.1 counts each replicated job's Jobs as ready (every pod ready or
// succeeded), succeeded and active (a pod pending or running); a JobSet runs once every Job is ready or done,
// and one whose pods are still pending is initializing, not running.
func TestBuiltinJobSetStatus(t *testing.T) {
	const spec = `spec:
  replicatedJobs:
  - {name: driver, template: {spec: {template: {spec: {containers: [{name: c}]}}}}}
  - {name: workers, replicas: 2, template: {spec: {parallelism: 4, completions: 4, template: {spec: {containers: [{name: c}]}}}}}
`
	tests := []struct {
		name, status string
		want         Phase
	}{
		{"no status yet", `{}`, PhaseUndefined},
		{"pods pending", `{replicatedJobsStatus: [{name: driver, active: 1}, {name: workers, active: 2}]}`, PhaseInitializing},
		{"some Jobs ready", `{replicatedJobsStatus: [{name: driver, active: 1, ready: 1}, {name: workers, active: 2, ready: 1}]}`, PhaseInitializing},
		{"every Job ready", `{replicatedJobsStatus: [{name: driver, active: 1, ready: 1}, {name: workers, active: 2, ready: 2}]}`, PhaseRunning},
		{"driver done, workers ready", `{replicatedJobsStatus: [{name: driver, succeeded: 1}, {name: workers, active: 2, ready: 2}]}`, PhaseRunning},
		{"in-order startup, driver ready", `{conditions: [{type: StartupPolicyInProgress, status: "True"}],
  replicatedJobsStatus: [{name: driver, active: 1, ready: 1}, {name: workers}]}`, PhaseInitializing},
		{"suspended", `{conditions: [{type: Suspended, status: "True"}], replicatedJobsStatus: [{name: driver, suspended: 1}, {name: workers, suspended: 2}]}`, PhaseUndefined},
		{"completed", `{conditions: [{type: Completed, status: "True"}], replicatedJobsStatus: [{name: driver, succeeded: 1}, {name: workers, succeeded: 2}]}`, PhaseCompleted},
		{"failed", `{conditions: [{type: Failed, status: "True"}], replicatedJobsStatus: [{name: driver, active: 1, ready: 1}, {name: workers, failed: 1, ready: 1}]}`, PhaseFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js, namespace: ml}\n"+
				spec+"status: "+tt.status+"\n"))
			if a.Status != tt.want {
				t.Errorf("status %s, want %s", a.Status, tt.want)
			}
		})
	}
}

// TestBuiltinLWSStatus: LWS v0.7.0 keeps Available and Progressing apart, and through a rolling update sets
// UpdateInProgress and Progressing (Available False) even while every group is ready: it runs when all its groups
// are ready, as a Deployment does, and initializes while some are not.
func TestBuiltinLWSStatus(t *testing.T) {
	tests := []struct {
		name, status string
		want         Phase
	}{
		{"no status yet", `{}`, PhaseUndefined},
		{"groups starting", `{readyReplicas: 1, conditions: [{type: Progressing, status: "True"}, {type: Available, status: "False"}]}`, PhaseInitializing},
		{"available", `{readyReplicas: 2, conditions: [{type: Available, status: "True"}, {type: Progressing, status: "False"}]}`, PhaseRunning},
		{"rolling update, every group ready", `{readyReplicas: 2, updatedReplicas: 1, conditions: [{type: Available, status: "False"},
  {type: Progressing, status: "True"}, {type: UpdateInProgress, status: "True"}]}`, PhaseRunning},
		{"rolling update, a group down", `{readyReplicas: 1, updatedReplicas: 1, conditions: [{type: Available, status: "False"},
  {type: Progressing, status: "True"}, {type: UpdateInProgress, status: "True"}]}`, PhaseInitializing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, `apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ml}
spec: {replicas: 2, leaderWorkerTemplate: {size: 2, workerTemplate: {spec: {containers: [{name: c}]}}}}
status: `+tt.status+"\n"))
			if a.Status != tt.want {
				t.Errorf("status %s, want %s", a.Status, tt.want)
			}
		})
	}
}

// TestBuiltinTrainingJobStatus: the Kubeflow job kinds share the training operator's conditions. Restarting (a
// replica failed and its pods are being recreated, Running False) is degraded; a suspended job keeps Created.
func TestBuiltinTrainingJobStatus(t *testing.T) {
	kinds := []struct{ apiVersion, kind, specs string }{
		{"kubeflow.org/v1", "PyTorchJob", "pytorchReplicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}"},
		{"kubeflow.org/v1", "TFJob", "tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}"},
		{"kubeflow.org/v1", "XGBoostJob", "xgbReplicaSpecs: {Master: {template: {spec: {containers: [{name: c}]}}}}"},
		{"kubeflow.org/v1", "PaddleJob", "paddleReplicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}"},
		{"kubeflow.org/v1", "JAXJob", "jaxReplicaSpecs: {Worker: {template: {spec: {containers: [{name: c}]}}}}"},
		{"kubeflow.org/v1", "MPIJob", "mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: c}]}}}}"},
		{"kubeflow.org/v2beta1", "MPIJob", "mpiReplicaSpecs: {Launcher: {template: {spec: {containers: [{name: c}]}}}}"},
	}
	const created = `{type: Created, status: "True"}`
	tests := []struct {
		name, conditions string
		want             Phase
	}{
		{"created", created, PhaseInitializing},
		{"running", created + `, {type: Running, status: "True"}`, PhaseRunning},
		{"restarting", created + `, {type: Restarting, status: "True"}`, PhaseDegraded},
		{"running again", created + `, {type: Running, status: "True"}, {type: Restarting, status: "False"}`, PhaseRunning},
		{"failed while restarting", created + `, {type: Restarting, status: "True"}, {type: Failed, status: "True"}`, PhaseFailed},
		{"succeeded", created + `, {type: Running, status: "False"}, {type: Succeeded, status: "True"}`, PhaseCompleted},
		{"suspended", created + `, {type: Running, status: "False"}, {type: Suspended, status: "True"}`, PhaseInitializing},
	}
	for _, k := range kinds {
		for _, tt := range tests {
			t.Run(k.apiVersion+"/"+k.kind+"/"+tt.name, func(t *testing.T) {
				a := analyzeBuiltin(t, mustParseObject(t, fmt.Sprintf("{apiVersion: %s, kind: %s, metadata: {name: j, namespace: ml}, spec: {%s}, status: {conditions: [%s]}}",
					k.apiVersion, k.kind, k.specs, tt.conditions)))
				if a.Status != tt.want {
					t.Errorf("status %s, want %s", a.Status, tt.want)
				}
			})
		}
	}
}

// TestBuiltinExclusiveUnitsNamespaces: JobSet's exclusive Jobs keep apart from JobSets of every namespace (its
// anti-affinity's namespaceSelector is {}), LeaderWorkerSet's groups only within their namespace (no
// namespaceSelector); the analysis report says so.
func TestBuiltinExclusiveUnitsNamespaces(t *testing.T) {
	tests := []struct {
		name, cr      string
		allNamespaces bool
	}{
		{"JobSet", `apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: js, namespace: ml, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: rack}}
spec: {replicatedJobs: [{name: w, replicas: 2, template: {spec: {template: {spec: {containers: [{name: c}]}}}}}]}
`, true},
		{"LeaderWorkerSet", `apiVersion: leaderworkerset.x-k8s.io/v1
kind: LeaderWorkerSet
metadata: {name: l, namespace: ml, annotations: {leaderworkerset.sigs.k8s.io/exclusive-topology: rack}}
spec: {replicas: 2, leaderWorkerTemplate: {size: 2, workerTemplate: {spec: {containers: [{name: c}]}}}}
`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := analyzeBuiltin(t, mustParseObject(t, tt.cr))
			if len(a.ExclusiveUnits) != 2 {
				t.Fatalf("units %+v, want 2", a.ExclusiveUnits)
			}
			r := NewReport(a, "builtin")
			for i, u := range a.ExclusiveUnits {
				if u.AllNamespaces != tt.allNamespaces || r.ExclusiveUnits[i].AllNamespaces != tt.allNamespaces {
					t.Errorf("unit %d: allNamespaces %v (reported %v), want %v", i, u.AllNamespaces, r.ExclusiveUnits[i].AllNamespaces, tt.allNamespaces)
				}
			}
		})
	}
}

// TestBuiltinJobSetExclusiveKey: JobSet v0.10.1 (labelAndAnnotateObject) writes the JobSet's exclusive-topology
// annotation onto each pod template, then the replicated job's Job template's over it; the pod webhook reads the
// pod's, so one the pod template carries itself counts when neither is set.
func TestBuiltinJobSetExclusiveKey(t *testing.T) {
	// meta is object metadata carrying the annotation with key, or none when key is "".
	meta := func(key string) string {
		if key == "" {
			return "{name: js, namespace: ml}"
		}
		return "{name: js, namespace: ml, annotations: {alpha.jobset.sigs.k8s.io/exclusive-topology: " + key + "}}"
	}
	tests := []struct {
		name, jobSet, jobTemplate, podTemplate string
		want                                   []string
	}{
		{"the JobSet's", "rack", "", "", []string{"rack alone: replicatedjob/a 1"}},
		{"the Job template's over the JobSet's", "rack", "zone", "", []string{"zone alone: replicatedjob/a 1"}},
		{"the pod template's alone", "", "", "rack", []string{"rack alone: replicatedjob/a 1"}},
		{"the JobSet's over the pod template's", "zone", "", "rack", []string{"zone alone: replicatedjob/a 1"}},
		{"none", "", "", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := fmt.Sprintf(`apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: %s
spec:
  replicatedJobs:
  - {name: a, template: {metadata: %s, spec: {template: {metadata: %s, spec: {containers: [{name: c}]}}}}}
`, meta(tt.jobSet), meta(tt.jobTemplate), meta(tt.podTemplate))
			got := unitsOf(analyzeBuiltin(t, mustParseObject(t, cr)).ExclusiveUnits)
			if !slices.Equal(got, tt.want) {
				t.Errorf("units %q, want %q", got, tt.want)
			}
		})
	}
}
