package schemas_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/schemas"
)

func TestSubjectsKeepDottedNamesInOneToken(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: "llama.v2"}
	cases := []struct {
		name, got, want string
	}{
		{"workload", schemas.WorkloadSubject(ref), "fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.llama_v2"},
		{"decision", schemas.DecisionSubject("gpu-a", ref), "fleetflow.decisions.gpu-a.kubeflow_org.PyTorchJob.team-a.llama_v2"},
		{"placement", schemas.PlacementSubject("gpu-a", ref), "fleetflow.events.placement.gpu-a.kubeflow_org.PyTorchJob.team-a.llama_v2"},
		{"core cluster-scoped", schemas.WorkloadSubject(schemas.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "ml"}),
			"fleetflow.events.workload.core.Namespace._.ml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("subject = %q, want %q", tc.got, tc.want)
			}
		})
	}
	if schemas.UntokenKey(schemas.Token("a.b.c")) != "a.b.c" {
		t.Error("Token is not reversible")
	}
}

// TestWorkloadStateFiltersSelectOneWorkload: the filters select every subject about a workload, on any cluster,
// and none about another workload, even one that differs only in its group.
func TestWorkloadStateFiltersSelectOneWorkload(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: "llama.v2"}
	other := ref
	other.Name = "llama"
	otherGroup := ref
	otherGroup.APIVersion = "example.com/v1"
	subjectsOf := func(r schemas.ObjectRef) []string {
		return []string{schemas.WorkloadSubject(r), schemas.VerdictSubject(r), schemas.AnalysisSubject(r),
			schemas.WorkloadStatusSubject("gpu-a", r), schemas.PlacementSubject("gpu-b", r), schemas.DecisionSubject("gpu-a", r)}
	}
	filters := schemas.WorkloadStateFilters(ref)
	selected := func(subject string) bool {
		for _, f := range filters {
			if schemas.SubjectMatches(f, subject) {
				return true
			}
		}
		return false
	}
	for _, subject := range subjectsOf(ref) {
		if !selected(subject) {
			t.Errorf("%s is about %s but no filter of %v selects it", subject, ref.Key(), filters)
		}
	}
	for _, r := range []schemas.ObjectRef{other, otherGroup} {
		for _, subject := range subjectsOf(r) {
			if selected(subject) {
				t.Errorf("%s is about %s but a filter of %v selects it", subject, r.Key(), filters)
			}
		}
	}
}

// TestClusterStateFiltersSelectOneCluster: the filters select every subject about a workload cluster and none
// about another cluster, even one whose name starts the same.
func TestClusterStateFiltersSelectOneCluster(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: "llama.v2"}
	subjectsOf := func(cluster string) []string {
		return []string{schemas.ClusterSpecSubject(cluster), schemas.ClusterHeartbeatSubject(cluster),
			schemas.ClusterAPIsSubject(cluster), schemas.NodeSubject(cluster, "gpu.1"), schemas.WorkloadStatusSubject(cluster, ref),
			schemas.PlacementSubject(cluster, ref), schemas.DecisionSubject(cluster, ref)}
	}
	filters := schemas.ClusterStateFilters("burst.1")
	selected := func(subject string) bool {
		return slices.ContainsFunc(filters, func(f string) bool { return schemas.SubjectMatches(f, subject) })
	}
	for _, subject := range subjectsOf("burst.1") {
		if !selected(subject) {
			t.Errorf("%s is about cluster burst.1 but no filter of %v selects it", subject, filters)
		}
	}
	for _, subject := range append(subjectsOf("burst.10"), schemas.WorkloadSubject(ref), schemas.VerdictSubject(ref)) {
		if selected(subject) {
			t.Errorf("%s is not about cluster burst.1 but a filter of %v selects it", subject, filters)
		}
	}
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		filter, subject string
		want            bool
	}{
		{"a.b.c", "a.b.c", true},
		{"a.b.c", "a.b.d", false},
		{"a.b.c", "a.b", false},
		{"a.b", "a.b.c", false},
		{"a.*.c", "a.x.c", true},
		{"a.*.c", "a.x.y.c", false},
		{"a.*", "a", false},
		{"*", "a", true},
		{"*", "a.b", false},
		{"a.>", "a.b", true},
		{"a.>", "a.b.c.d", true},
		{"a.>", "a", false},
		{"a.>", "ab.c", false},
		{"a.*.>", "a.b.c", true},
		{"a.*.>", "a.b", false},
		{">", "a.b", true},
		{"a.b", "a.bc", false},
		{"a.bc", "a.b", false},
	} {
		if got := schemas.SubjectMatches(tc.filter, tc.subject); got != tc.want {
			t.Errorf("SubjectMatches(%q, %q) = %t, want %t", tc.filter, tc.subject, got, tc.want)
		}
	}
}

// TestIsPlacerInput: a subject is a placer input when, and only when, a filter of PlacerInputs selects it.
func TestIsPlacerInput(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: "llama.v2"}
	type subject struct {
		name, subject string
		want          bool
	}
	var cases []subject
	// Every filter selects a subject with a token for each "*" and two for a last ">", and not the subject
	// that stops before that ">".
	for _, filter := range schemas.PlacerInputs {
		concrete := strings.ReplaceAll(filter, "*", "x")
		if head, ok := strings.CutSuffix(concrete, ".>"); ok {
			concrete = head + ".x.y"
			cases = append(cases, subject{filter + " without its tail", head, false})
		}
		cases = append(cases, subject{filter, concrete, true})
	}
	cases = append(cases,
		subject{"workload", schemas.WorkloadSubject(ref), true},
		subject{"policy", schemas.PolicySubject(ref), true},
		subject{"resource interface", schemas.ResourceInterfaceSubject(ref), true},
		subject{"namespace", schemas.NamespaceSubject("team-a"), true},
		subject{"cluster spec", schemas.ClusterSpecSubject("gpu.1"), true},
		subject{"cluster heartbeat", schemas.ClusterHeartbeatSubject("gpu.1"), true},
		subject{"cluster APIs", schemas.ClusterAPIsSubject("gpu.1"), true},
		subject{"node", schemas.NodeSubject("gpu.1", "n.1"), true},
		subject{"workload status", schemas.WorkloadStatusSubject("gpu.1", ref), true},
		subject{"applier report", schemas.PlacementSubject("gpu.1", ref), true},
		subject{"tick", schemas.SubjectPlacerTick, true},
		subject{"verdict", schemas.VerdictSubject(ref), false},
		subject{"analysis", schemas.AnalysisSubject(ref), false},
		subject{"decision", schemas.DecisionSubject("gpu.1", ref), false},
		subject{"a kind that starts like an input", schemas.SubjectEventsPrefix + ".workloads.x", false},
		subject{"another root", "other.events.workload.x", false},
		subject{"empty", "", false},
	)
	for _, tc := range cases {
		if got := schemas.IsPlacerInput(tc.subject); got != tc.want {
			t.Errorf("%s: IsPlacerInput(%q) = %t, want %t", tc.name, tc.subject, got, tc.want)
		}
	}
}

func TestVerdictOutcome(t *testing.T) {
	for _, tc := range []struct {
		status   schemas.VerdictStatus
		clusters []string
		want     string
	}{
		{schemas.VerdictPlaced, []string{"east"}, "Placed on east"},
		{schemas.VerdictPlaced, []string{"east", "west"}, "Placed on east,west"},
		{schemas.VerdictUnschedulable, nil, "Unschedulable"},
		{schemas.VerdictNoPolicy, []string{}, "NoPolicy"},
	} {
		if got := schemas.VerdictOutcome(tc.status, tc.clusters); got != tc.want {
			t.Errorf("VerdictOutcome(%s, %v) = %q, want %q", tc.status, tc.clusters, got, tc.want)
		}
	}
}

func TestPayloadValidationNamesTheField(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "ray.io/v1", Kind: "RayCluster", Namespace: "ns", Name: "rc", UID: "u"}
	obj := map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster",
		"metadata": map[string]any{"name": "rc", "namespace": "ns", "uid": "u", "resourceVersion": "1"}}
	cases := []struct {
		name    string
		payload schemas.Payload
		want    []string // substrings of the error; empty means valid
	}{
		{"changed ok", &schemas.WorkloadChanged{Object: obj}, nil},
		{"changed without object", &schemas.WorkloadChanged{}, []string{"object: required"}},
		{"changed without uid and rv", &schemas.WorkloadChanged{Object: map[string]any{"apiVersion": "v1", "kind": "X",
			"metadata": map[string]any{"name": "n"}}}, []string{"object.metadata.uid: required", "object.metadata.resourceVersion: required"}},
		{"deleted without kind", &schemas.WorkloadDeleted{Workload: schemas.ObjectRef{APIVersion: "v1", Name: "n", UID: "u"}},
			[]string{"workload.kind: required"}},
		{"decided ok", &schemas.PlacementDecided{DecisionID: "d", Workload: ref, Cluster: "c", Action: schemas.ActionApply,
			Sequence: 1, Object: obj}, nil},
		{"decided bad action and no sequence", &schemas.PlacementDecided{DecisionID: "d", Workload: ref, Cluster: "c", Action: "Move"},
			[]string{`action: "Move" is not one of`, "sequence: must be positive"}},
		{"decided apply without object", &schemas.PlacementDecided{DecisionID: "d", Workload: ref, Cluster: "c",
			Action: schemas.ActionApply, Sequence: 2}, []string{"object: required for action Apply"}},
		{"decided object of another workload", &schemas.PlacementDecided{DecisionID: "d", Workload: ref, Cluster: "c",
			Action: schemas.ActionApply, Sequence: 2, Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster",
				"metadata": map[string]any{"name": "other", "namespace": "ns"}}}, []string{"does not match workload"}},
		{"failed without error", &schemas.PlacementFailed{DecisionID: "d", Workload: ref, Cluster: "c", Sequence: 1},
			[]string{"error: required"}},
		{"node with negative counts", &schemas.NodeState{Cluster: "c", Name: "n", Pods: -1,
			WorkloadPods: map[string]int{"uid-a": 2, "uid-b": -5}}, []string{"pods: negative", "workloadPods.uid-b: negative count -5"}},
		{"node ok", &schemas.NodeState{Cluster: "c", Name: "n", Pods: 2, WorkloadPods: map[string]int{"uid-a": 2}}, nil},
		{"node claiming 10^18 GPUs and an exbibyte of memory", nodeWith(map[corev1.ResourceName]string{
			"nvidia.com/gpu": "1e18", corev1.ResourceMemory: "1Ei", corev1.ResourceCPU: "64"}),
			[]string{"allocatable.nvidia.com/gpu: 1e18 is more than a node can plausibly offer (at most 16Mi)",
				"allocatable.memory: 1Ei is more than a node can plausibly offer (at most 1Pi)"}},
		{"node claiming a million cores", nodeWith(map[corev1.ResourceName]string{corev1.ResourceCPU: "1M"}),
			[]string{"allocatable.cpu: 1M is more than a node can plausibly offer (at most 65536)"}},
		{"node claiming too many pods", nodeWith(map[corev1.ResourceName]string{corev1.ResourcePods: "2M"}),
			[]string{"allocatable.pods: 2M is more than a node can plausibly offer"}},
		{"node claiming too large hugepages", nodeWith(map[corev1.ResourceName]string{"hugepages-1Gi": "2Pi"}),
			[]string{"allocatable.hugepages-1Gi: 2Pi is more than a node can plausibly offer (at most 1Pi)"}},
		{"the largest plausible node", nodeWith(map[corev1.ResourceName]string{corev1.ResourceCPU: "65536",
			corev1.ResourceMemory: "1Pi", corev1.ResourceEphemeralStorage: "64Pi", corev1.ResourcePods: "1M",
			"nvidia.com/gpu": "72", "nvidia.com/gpumem": "1179648", "hugepages-2Mi": "1Ti"}), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.payload.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want errors %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestObjectChangedIDTellsVersionsApart: the same object at the same resourceVersion, read in another API
// version once its CRD stopped serving the first, is another event; read again in the same version, it is
// the same event, so producer replicas are deduplicated.
func TestObjectChangedIDTellsVersionsApart(t *testing.T) {
	v1 := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "MPIJob", Namespace: "team", Name: "train", UID: "uid-1"}
	v2 := v1
	v2.APIVersion = "kubeflow.org/v2beta1"
	if schemas.ObjectChangedID("workload", v1, "7") == schemas.ObjectChangedID("workload", v2, "7") {
		t.Error("the same object version read in two API versions has one id")
	}
	again := v1
	if schemas.ObjectChangedID("workload", v1, "7") != schemas.ObjectChangedID("workload", again, "7") {
		t.Error("the same object version read twice in one API version has two ids")
	}
	if schemas.WorkloadChangedID(v1, "7") != schemas.ObjectChangedID("workload", v1, "7") {
		t.Error("WorkloadChangedID differs from what the producer publishes for a workload")
	}
}

// TestApplierConsumerNamesFitJetStream: a cluster name may be 253 characters long; its applier's consumer name
// stays within what JetStream stores a consumer under, distinct for names that share their first 200
// characters, and unchanged for names that fit.
func TestApplierConsumerNamesFitJetStream(t *testing.T) {
	long := strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + "." + strings.Repeat("e", 63) + "." + strings.Repeat("f", 63)
	other := long[:len(long)-1] + "g"
	if got := schemas.ApplierConsumerName("gpu-west.example"); got != "applier-gpu-west_example" {
		t.Errorf("short name %q, want applier-gpu-west_example", got)
	}
	a, b := schemas.ApplierConsumerName(long), schemas.ApplierConsumerName(other)
	if len(a) > 200 || len(b) > 200 || a == b || !strings.HasPrefix(a, "applier-ccc") {
		t.Errorf("names %q (%d) and %q (%d), want distinct names of at most 200 characters", a, len(a), b, len(b))
	}
}

func TestIsDecision(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web"}
	for _, tc := range []struct {
		subject string
		want    bool
	}{
		{schemas.DecisionSubject("east", ref), true},
		{schemas.ClusterDecisionsFilter("east"), true},
		{schemas.SubjectDecisionsRoot, false},
		{schemas.SubjectDecisionsRoot + "x.east", false},
		{schemas.VerdictSubject(ref), false},
		{schemas.WorkloadSubject(ref), false},
	} {
		if got := schemas.IsDecision(tc.subject); got != tc.want {
			t.Errorf("IsDecision(%q) = %v, want %v", tc.subject, got, tc.want)
		}
	}
}

// TestDeadLetterSubjectIsOneToken: whatever a consumer's name holds, its dead letters are on one subject token
// after "dead", which a filter of dead.<token> selects alone.
func TestDeadLetterSubjectIsOneToken(t *testing.T) {
	for _, tc := range []struct{ consumer, want string }{
		{"placer", "dead.placer"},
		{"applier-gpu-west", "dead.applier-gpu-west"},
		{"applier-gpu.west", "dead.applier-gpu_west"},
		{"a*b>c d", "dead.a_b_c_d"},
		{"", "dead._"},
	} {
		t.Run(tc.consumer, func(t *testing.T) {
			got := schemas.DeadLetterSubject(tc.consumer)
			if got != tc.want || !schemas.SubjectMatches(schemas.SubjectAllDead, got) || strings.Count(got, ".") != 1 {
				t.Errorf("DeadLetterSubject(%q) = %q, want %q", tc.consumer, got, tc.want)
			}
		})
	}
	if a, b := schemas.DeadLetterID("S", 1, "c"), schemas.DeadLetterID("S", 1, "d"); a == b {
		t.Errorf("two consumers' dead letters of one message share the id %q", a)
	}
}

// nodeWith is a node reporting the given allocatable quantities.
func nodeWith(allocatable map[corev1.ResourceName]string) *schemas.NodeState {
	list := corev1.ResourceList{}
	for name, q := range allocatable {
		list[name] = resource.MustParse(q)
	}
	return &schemas.NodeState{Cluster: "c", Name: "n", Allocatable: list}
}

// TestClusterOfNodeSubject: the cluster of a node subject comes back as it was named, dots and all; any other
// subject names none.
func TestClusterOfNodeSubject(t *testing.T) {
	for _, tc := range []struct {
		name, subject, cluster string
		ok                     bool
	}{
		{"a node", schemas.NodeSubject("east", "n1"), "east", true},
		{"dotted names", schemas.NodeSubject("gpu.east", "n1.example.com"), "gpu.east", true},
		{"a heartbeat", schemas.ClusterHeartbeatSubject("east"), "", false},
		{"no node token", schemas.SubjectEventsPrefix + ".node.east", "", false},
		{"an empty cluster token", schemas.SubjectEventsPrefix + ".node..n1", "", false},
		{"a workload", schemas.WorkloadSubject(schemas.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "a", Name: "b"}), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if cluster, ok := schemas.ClusterOfNodeSubject(tc.subject); cluster != tc.cluster || ok != tc.ok {
				t.Errorf("ClusterOfNodeSubject(%q) = %q, %v; want %q, %v", tc.subject, cluster, ok, tc.cluster, tc.ok)
			}
		})
	}
}
