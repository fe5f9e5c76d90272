package status

import (
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestStatusWriterForgetsDeletedClusters: a deleted cluster's view, nodes and all, leaves the status writer's
// memory; the other clusters' views stay.
func TestStatusWriterForgetsDeletedClusters(t *testing.T) {
	s := NewStatusWriter(nil, nil, slog.New(slog.DiscardHandler))
	for _, cluster := range []string{"east", "burst-1"} {
		node := &schemas.NodeState{Cluster: cluster, Name: "n1", Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
		if err := s.Handle(t.Context(), delivery(t, 1, schemas.TypeNodeChanged, schemas.NodeSubject(cluster, "n1"), node)); err != nil {
			t.Fatal(err)
		}
	}
	deleted := &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster",
		Name: "burst-1", UID: "uid-burst-1"}}
	if err := s.Handle(t.Context(), delivery(t, 2, schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("burst-1"), deleted)); err != nil {
		t.Fatal(err)
	}
	if _, kept := s.clusters["burst-1"]; kept {
		t.Error("the deleted cluster's view is still in memory")
	}
	if c := s.clusters["east"]; c == nil || len(c.nodes) != 1 {
		t.Errorf("east's view = %+v, want it kept with its node", c)
	}
}

// fleetStatusFixture is a status writer on a fake control plane holding the Cluster east, whose status
// writes fail while failWrites is set.
type fleetStatusFixture struct {
	t          *testing.T
	s          *StatusWriter
	dynamic    *dynamicfake.FakeDynamicClient
	failWrites bool
	seq        uint64
}

func newFleetStatusFixture(t *testing.T) *fleetStatusFixture {
	t.Helper()
	scheme := runtime.NewScheme()
	east := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": "east", "uid": "uid-east"}}}
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{clusterResource: "ClusterList"}, east)
	f := &fleetStatusFixture{t: t, dynamic: dynamic}
	for _, verb := range []string{"update", "patch"} {
		dynamic.PrependReactor(verb, "clusters", func(k8stesting.Action) (bool, runtime.Object, error) {
			if f.failWrites {
				return true, nil, apierrors.NewServiceUnavailable("the apiserver is restarting")
			}
			return false, nil, nil
		})
	}
	f.s = NewStatusWriter(&kube.Clients{Dynamic: dynamic}, nil, slog.New(slog.DiscardHandler))
	return f
}

func (f *fleetStatusFixture) handle(eventType, subject string, payload schemas.Payload) error {
	f.t.Helper()
	f.seq++
	return f.s.Handle(f.t.Context(), delivery(f.t, f.seq, eventType, subject, payload))
}

func (f *fleetStatusFixture) must(eventType, subject string, payload schemas.Payload) {
	f.t.Helper()
	if err := f.handle(eventType, subject, payload); err != nil {
		f.t.Fatalf("%s: %v", subject, err)
	}
}

// shown is the status of the Cluster east on the fake control plane.
func (f *fleetStatusFixture) shown() v1alpha1.ClusterStatus {
	f.t.Helper()
	obj, err := f.dynamic.Resource(clusterResource).Get(f.t.Context(), "east", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var c v1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &c); err != nil {
		f.t.Fatal(err)
	}
	return c.Status
}

func readyOf(status v1alpha1.ClusterStatus) metav1.ConditionStatus {
	for _, c := range status.Conditions {
		if c.Type == v1alpha1.ClusterConditionReady {
			return c.Status
		}
	}
	return ""
}

// TestClusterStatusShowsWhatIsLeft: the Cluster's status is replaced as a whole, so the totals of a resource
// no node has any more go, instead of staying as they were last written.
func TestClusterStatusShowsWhatIsLeft(t *testing.T) {
	f := newFleetStatusFixture(t)
	now := time.Now()
	gpu := &schemas.NodeState{Cluster: "east", Name: "gpu-1", Ready: true, Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("32"), "nvidia.com/gpu": resource.MustParse("4")}}
	f.must(schemas.TypeNodeChanged, schemas.NodeSubject("east", "gpu-1"), gpu)
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: now})
	if q := f.shown().Allocatable["nvidia.com/gpu"]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Fatalf("allocatable GPUs = %s, want 4", q.String())
	}
	f.must(schemas.TypeNodeDeleted, schemas.NodeSubject("east", "gpu-1"), &schemas.NodeDeleted{Cluster: "east", Name: "gpu-1"})
	cpu := &schemas.NodeState{Cluster: "east", Name: "cpu-1", Ready: true, Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8")}}
	f.must(schemas.TypeNodeChanged, schemas.NodeSubject("east", "cpu-1"), cpu)
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: now.Add(time.Second)})
	shown := f.shown()
	if _, left := shown.Allocatable["nvidia.com/gpu"]; left {
		t.Errorf("allocatable = %v, want no GPUs once the GPU node is gone", shown.Allocatable)
	}
	if _, left := shown.Free["nvidia.com/gpu"]; left {
		t.Errorf("free = %v, want no GPUs once the GPU node is gone", shown.Free)
	}
	if q := shown.Allocatable[corev1.ResourceCPU]; q.Cmp(resource.MustParse("8")) != 0 {
		t.Errorf("allocatable CPU = %s, want 8", q.String())
	}
}

// TestClusterTurningNotReadyIsWrittenAgainAfterAFailedWrite: the tick that finds a cluster silent writes it
// NotReady; when that write fails, the tick's retry writes it, instead of finding the change already taken.
func TestClusterTurningNotReadyIsWrittenAgainAfterAFailedWrite(t *testing.T) {
	f := newFleetStatusFixture(t)
	f.s.HeartbeatTimeout = 30 * time.Second
	beat := time.Now()
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: beat})
	if got := readyOf(f.shown()); got != metav1.ConditionTrue {
		t.Fatalf("Ready = %s after a heartbeat, want True", got)
	}
	tick := &schemas.PlacerTick{Time: beat.Add(time.Minute)}
	f.failWrites = true
	if err := f.handle(schemas.TypePlacerTick, schemas.SubjectPlacerTick, tick); err == nil {
		t.Fatal("the tick succeeded although its write failed")
	}
	f.failWrites = false
	f.must(schemas.TypePlacerTick, schemas.SubjectPlacerTick, tick)
	if got := readyOf(f.shown()); got != metav1.ConditionFalse {
		t.Errorf("Ready = %s after the retried tick, want False", got)
	}
}

// TestHeartbeatFromAClockRunningAheadShowsWhenStored: the Cluster's status shows a heartbeat stamped later than
// the stream stored it as of its storing, and the cluster turns NotReady once silent past the timeout.
func TestHeartbeatFromAClockRunningAheadShowsWhenStored(t *testing.T) {
	f := newFleetStatusFixture(t)
	f.s.HeartbeatTimeout = 30 * time.Second
	stored := time.Now().Truncate(time.Second)
	f.seq++
	ahead := delivery(t, f.seq, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
		&schemas.ClusterHeartbeat{Cluster: "east", Time: stored.Add(time.Hour)})
	ahead.Stored = stored
	ahead.Event.SetTime(stored.Add(time.Hour)) // the producer's clock stamps the event too
	if err := f.s.Handle(t.Context(), ahead); err != nil {
		t.Fatal(err)
	}
	if got := f.shown().LastHeartbeatTime; got == nil || !got.Time.Equal(stored) {
		t.Errorf("last heartbeat shown = %v, want %v, when it was stored", got, stored)
	}
	if got := readyOf(f.shown()); got != metav1.ConditionTrue {
		t.Errorf("Ready = %s right after the heartbeat, want True", got)
	}
	f.must(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: stored.Add(time.Minute)})
	if got := readyOf(f.shown()); got != metav1.ConditionFalse {
		t.Errorf("Ready = %s a minute after the heartbeat was stored, want False", got)
	}
}

// TestLateEventsOfADeletedClusterAreIgnored: what a deleted cluster's producer still sends before it stops
// does not bring its view back, until a Cluster of that name is registered again.
func TestLateEventsOfADeletedClusterAreIgnored(t *testing.T) {
	f := newFleetStatusFixture(t)
	ref := schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster", Name: "east", UID: "uid-east"}
	f.must(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("east"), &schemas.ObjectDeleted{Workload: ref})
	node := &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
	f.must(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), node)
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	if _, back := f.s.clusters["east"]; back {
		t.Fatal("late events of the deleted cluster brought its view back")
	}
	registered := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": "east", "uid": "uid-east-2", "resourceVersion": "1"}}}
	f.must(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), registered)
	f.must(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), node)
	if c := f.s.clusters["east"]; c == nil || len(c.nodes) != 1 {
		t.Errorf("east's view once registered again = %+v, want its node", c)
	}
}

// TestStatusWriterRestoresUserResourceInterfaces: a restarted status writer gets the RIs users applied from
// the streams' state, so their statusMappings keep mapping phases; an RI deleted since is gone again.
func TestStatusWriterRestoresUserResourceInterfaces(t *testing.T) {
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	s := NewStatusWriter(nil, karta.NewRegistry(builtins...), slog.New(slog.DiscardHandler))
	widget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	ri := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "optimization.nvidia.com/v1alpha1", "kind": "ResourceInterface",
		"metadata": map[string]any{"name": "widget", "uid": "uid-ri", "resourceVersion": "1"},
		"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
			"name": "widget", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
			"specDefinition": map[string]any{"podTemplateSpecPath": ".spec.template"}}}}}}
	s.Restore(schemas.TypeResourceInterfaceChanged, ri, time.Time{})
	if _, ok := s.ris.Lookup(widget); !ok {
		t.Fatal("the user's RI is not in force after Restore")
	}
	s.Restore(schemas.TypeResourceInterfaceDeleted, &schemas.ObjectDeleted{Workload: ri.Ref()}, time.Time{})
	if _, ok := s.ris.Lookup(widget); ok {
		t.Error("a deleted RI is still in force after Restore")
	}
}

// TestClusterNotHeardFromIsShownNotReady: a Cluster registered whose producer never reported (its kubeconfig
// does not work, say) is shown Ready=False at once instead of with no status; the Joined condition the cluster
// manager wrote stays when the writer writes Ready.
func TestClusterNotHeardFromIsShownNotReady(t *testing.T) {
	f := newFleetStatusFixture(t)
	obj, err := f.dynamic.Resource(clusterResource).Get(t.Context(), "east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	joined := map[string]any{"type": v1alpha1.ClusterConditionJoined, "status": "False", "reason": "KubeconfigUnavailable",
		"message": "cannot reach cluster", "lastTransitionTime": "2026-11-30T00:00:00Z"}
	if err := unstructured.SetNestedSlice(obj.Object, []any{joined}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.dynamic.Resource(clusterResource).UpdateStatus(t.Context(), obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	registered := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": "east", "uid": "uid-east", "resourceVersion": "1"}}}
	f.must(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), registered)
	status := f.shown()
	if readyOf(status) != metav1.ConditionFalse {
		t.Errorf("Ready = %q, want False for a cluster never heard from (conditions %+v)", readyOf(status), status.Conditions)
	}
	kept := false
	for _, c := range status.Conditions {
		kept = kept || (c.Type == v1alpha1.ClusterConditionJoined && c.Reason == "KubeconfigUnavailable")
	}
	if !kept {
		t.Errorf("the Joined condition went when Ready was written: %+v", status.Conditions)
	}
}

// TestClusterStatusCountsBoundPodsAgainstPodSlots: every pod bound to a node takes one of its pod slots,
// whatever it requests, in the free totals as in the placer's view.
func TestClusterStatusCountsBoundPodsAgainstPodSlots(t *testing.T) {
	f := newFleetStatusFixture(t)
	node := &schemas.NodeState{Cluster: "east", Name: "cpu-1", Ready: true, Pods: 3, Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")},
		Requested: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	f.must(schemas.TypeNodeChanged, schemas.NodeSubject("east", "cpu-1"), node)
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	shown := f.shown()
	if q := shown.Free[corev1.ResourcePods]; q.Cmp(resource.MustParse("107")) != 0 {
		t.Errorf("free pods = %s, want 107 (110 less the 3 bound)", q.String())
	}
	if q := shown.Free[corev1.ResourceCPU]; q.Cmp(resource.MustParse("7")) != 0 {
		t.Errorf("free cpu = %s, want 7", q.String())
	}
}

// TestObservedGenerationInControlPlaneTerms: a copy's observedGeneration is shown as the control-plane
// generation its controller acted on: the object's own once the copy is caught up and of the object's current
// content, behind it otherwise; left alone when the copy does not say what it was applied from.
func TestObservedGenerationInControlPlaneTerms(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "team", "generation": int64(7)},
		"spec":     map[string]any{"replicas": int64(2)}}}
	current := objects.ContentOf(obj.Object)
	tests := []struct {
		name     string
		status   map[string]any
		copyOf   schemas.WorkloadStatus
		observed any
	}{
		{"caught up, current", map[string]any{"observedGeneration": int64(3)},
			schemas.WorkloadStatus{Generation: 3, SourceGeneration: 5, SourceContent: current}, int64(7)},
		{"caught up, as decoded from an event", map[string]any{"observedGeneration": float64(3)},
			schemas.WorkloadStatus{Generation: 3, SourceGeneration: 5, SourceContent: current}, int64(7)},
		{"not caught up, current", map[string]any{"observedGeneration": int64(2)},
			schemas.WorkloadStatus{Generation: 3, SourceGeneration: 7, SourceContent: current}, int64(6)},
		{"caught up on an earlier version", map[string]any{"observedGeneration": int64(3)},
			schemas.WorkloadStatus{Generation: 3, SourceGeneration: 4, SourceContent: "an earlier content"}, int64(4)},
		{"not caught up on an earlier version", map[string]any{"observedGeneration": int64(2)},
			schemas.WorkloadStatus{Generation: 3, SourceGeneration: 4, SourceContent: "an earlier content"}, int64(3)},
		{"an earlier version, source generation unknown", map[string]any{"observedGeneration": int64(3)},
			schemas.WorkloadStatus{Generation: 3, SourceContent: "an earlier content"}, int64(6)},
		{"a copy that does not say", map[string]any{"observedGeneration": int64(3)},
			schemas.WorkloadStatus{Generation: 3}, int64(3)},
		{"no observedGeneration", map[string]any{"replicas": int64(2)},
			schemas.WorkloadStatus{Generation: 3, SourceContent: current}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.status["observedGeneration"]
			got := inControlPlaneTerms(tt.status, &tt.copyOf, &controlPlaneObject{Unstructured: obj})
			if got["observedGeneration"] != tt.observed {
				t.Errorf("observedGeneration shown = %v (%T), want %v", got["observedGeneration"], got["observedGeneration"], tt.observed)
			}
			if tt.status["observedGeneration"] != before {
				t.Errorf("the status handled was changed in place: observedGeneration %v, was %v", tt.status["observedGeneration"], before)
			}
		})
	}
}

// TestSpreadStatusTakesEveryCopy: a spread shows one copy's status (see leastAdvanced), but for what rollout tools
// read: replica counters summed over a Divide's shares and the least of them over whole copies, and the least
// observedGeneration of the copies (behind while a copy has not reported).
func TestSpreadStatusTakesEveryCopy(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "team", "generation": int64(5)},
		"spec":     map[string]any{"replicas": int64(10)}}}
	current := objects.ContentOf(obj.Object)
	copyStatus := func(cluster string, ready float64, observed, generation int64) *schemas.WorkloadStatus {
		return &schemas.WorkloadStatus{Cluster: cluster, Generation: generation, SourceContent: current,
			Status: map[string]any{"replicas": ready, "readyReplicas": ready, "observedGeneration": float64(observed),
				"conditions": []any{map[string]any{"type": "Available", "status": "True", "from": cluster}}}}
	}
	// withoutReady leaves readyReplicas out, as the API does when it is 0.
	withoutReady := func(s *schemas.WorkloadStatus) *schemas.WorkloadStatus {
		delete(s.Status, "readyReplicas")
		return s
	}
	tests := []struct {
		name               string
		statuses           []*schemas.WorkloadStatus
		divided            bool
		ready, replicas    int64
		observedGeneration int64
	}{
		{"divided 6/4, both caught up", []*schemas.WorkloadStatus{copyStatus("a", 6, 2, 2), copyStatus("b", 4, 1, 1)}, true, 10, 10, 5},
		{"divided, one copy behind", []*schemas.WorkloadStatus{copyStatus("a", 6, 2, 2), copyStatus("b", 4, 1, 2)}, true, 10, 10, 4},
		{"divided, one copy not reported", []*schemas.WorkloadStatus{copyStatus("a", 6, 2, 2), nil}, true, 6, 6, 4},
		{"duplicated, least ready", []*schemas.WorkloadStatus{copyStatus("a", 10, 3, 3), copyStatus("b", 7, 1, 1)}, false, 7, 7, 5},
		{"divided, the first copy with none ready", []*schemas.WorkloadStatus{withoutReady(copyStatus("a", 0, 2, 2)),
			copyStatus("b", 4, 1, 1)}, true, 4, 4, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shown := tt.statuses[0]
			before := maps.Clone(shown.Status)
			got := spreadStatus(obj, tt.statuses, shown, tt.divided)
			if got["readyReplicas"] != tt.ready || got["replicas"] != tt.replicas || got["observedGeneration"] != tt.observedGeneration {
				t.Errorf("status shown = readyReplicas %v, replicas %v, observedGeneration %v; want %d, %d, %d", got["readyReplicas"],
					got["replicas"], got["observedGeneration"], tt.ready, tt.replicas, tt.observedGeneration)
			}
			if conditions := got["conditions"].([]any); conditions[0].(map[string]any)["from"] != "a" {
				t.Errorf("conditions shown = %v, want those of the copy shown", conditions)
			}
			if shown.Status["readyReplicas"] != before["readyReplicas"] || shown.Status["observedGeneration"] != before["observedGeneration"] {
				t.Errorf("the copy's status was changed in place: %v, was %v", shown.Status, before)
			}
		})
	}
}

// TestSpreadShowsItsLeastAdvancedCopy: a spread shows the status of the copy whose phase holds it back, the
// first in cluster order among equals, and none while no copy reported.
func TestSpreadShowsItsLeastAdvancedCopy(t *testing.T) {
	copyOn := func(cluster string) *schemas.WorkloadStatus { return &schemas.WorkloadStatus{Cluster: cluster} }
	tests := []struct {
		name     string
		statuses []*schemas.WorkloadStatus
		phases   []karta.Phase
		want     string
	}{
		{"a later copy failed", []*schemas.WorkloadStatus{copyOn("a"), copyOn("b"), copyOn("c")},
			[]karta.Phase{karta.PhaseRunning, karta.PhaseRunning, karta.PhaseFailed}, "c"},
		{"equals: the first", []*schemas.WorkloadStatus{copyOn("a"), copyOn("b")},
			[]karta.Phase{karta.PhaseRunning, karta.PhaseRunning}, "a"},
		{"an unmapped phase ranks below Running", []*schemas.WorkloadStatus{copyOn("a"), copyOn("b")},
			[]karta.Phase{karta.PhaseCompleted, karta.PhaseUndefined}, "b"},
		{"a copy not reported is not shown", []*schemas.WorkloadStatus{nil, copyOn("b")},
			[]karta.Phase{karta.PhaseUndefined, karta.PhaseRunning}, "b"},
		{"none reported", []*schemas.WorkloadStatus{nil, nil}, []karta.Phase{karta.PhaseUndefined, karta.PhaseUndefined}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if shown := leastAdvanced(tt.statuses, tt.phases); shown != nil {
				got = shown.Cluster
			}
			if got != tt.want {
				t.Errorf("shown the copy on %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRestoredHeartbeatCountsFromTheEarlierOfItsTimes: a heartbeat restored from the state stream counts from
// when the stream stored its copy, by the server's clock, or from its own time when that is earlier (a copy
// made late, by a state stream catching up), and never from after now. A producer whose clock ran an hour
// ahead and that stopped two minutes ago leaves its cluster silent, not Ready for another hour.
func TestRestoredHeartbeatCountsFromTheEarlierOfItsTimes(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name               string
		stamped, stored    time.Time
		want               time.Time
		wantFreshAfterward bool
	}{
		{"a clock running ahead", now.Add(time.Hour), now.Add(-2 * time.Minute), now.Add(-2 * time.Minute), false},
		{"a copy made late", now.Add(-10 * time.Minute), now.Add(-time.Second), now.Add(-10 * time.Minute), false},
		{"a fresh heartbeat", now.Add(-time.Second), now.Add(-time.Second), now.Add(-time.Second), true},
		{"storing time unknown, stamped ahead", now.Add(time.Hour), time.Time{}, now, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &StatusWriter{HeartbeatTimeout: 30 * time.Second}
			s.Restore(schemas.TypeClusterHeartbeat, &schemas.ClusterHeartbeat{Cluster: "east", Time: tt.stamped}, tt.stored)
			got := s.clusterView("east").lastHeartbeat
			if tt.stored.IsZero() {
				if got.Before(tt.want) || got.After(time.Now()) {
					t.Errorf("restored heartbeat at %v, want now (%v)", got, tt.want)
				}
			} else if !got.Equal(tt.want) {
				t.Errorf("restored heartbeat at %v, want %v", got, tt.want)
			}
			if fresh := s.fresh(s.clusterView("east"), time.Now()); fresh != tt.wantFreshAfterward {
				t.Errorf("cluster fresh = %v, want %v", fresh, tt.wantFreshAfterward)
			}
		})
	}
}

// TestStatusIsCopiedOnlyForKindsAnRIDescribes: a copy's status is written onto the control-plane object of a
// kind a ResourceInterface describes; a kind a policy copies as it is (a CRD, whose status on the control plane
// is the apiserver's own) keeps its status, even when its copy reports one.
func TestStatusIsCopiedOnlyForKindsAnRIDescribes(t *testing.T) {
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		obj        *unstructured.Unstructured
		gvr        schema.GroupVersionResource
		wantStatus bool
	}{
		{"a Deployment", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team", "uid": "uid-web"}}},
			schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
		{"a CRD", &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "widgets.example.com", "uid": "uid-crd"},
			"status":   map[string]any{"storedVersions": []any{"v1"}}}},
			schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dynamic := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), tt.obj.DeepCopy())
			s := NewStatusWriter(&kube.Clients{Dynamic: dynamic}, karta.NewRegistry(builtins...), slog.New(slog.DiscardHandler))
			client := dynamic.Resource(tt.gvr).Namespace(tt.obj.GetNamespace())
			copied := &schemas.WorkloadStatus{Cluster: "east", Workload: schemas.RefOf(tt.obj.Object),
				Status: map[string]any{"observedGeneration": int64(1), "storedVersions": []any{"v1", "v2"}}}
			if _, err := s.writeStatus(t.Context(), client, tt.obj, copied); err != nil {
				t.Fatal(err)
			}
			wrote := slices.ContainsFunc(dynamic.Actions(), func(a k8stesting.Action) bool { return a.GetSubresource() == "status" })
			if wrote != tt.wantStatus {
				t.Errorf("status written %v, want %v (actions %v)", wrote, tt.wantStatus, dynamic.Actions())
			}
		})
	}
}

// TestInvalidClusterIsShownNotAccepted: a Cluster whose taint its CRD's schema let in though it is invalid shows
// Accepted=False naming the field's path and value, and that it takes no new workloads; fixed, Accepted=True.
// Other conditions (Joined, Ready) stay beside it, and a writer that restarted knows the spec from the state.
func TestInvalidClusterIsShownNotAccepted(t *testing.T) {
	f := newFleetStatusFixture(t)
	withEffect := func(effect string) *schemas.ObjectChanged {
		return &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
			"metadata": map[string]any{"name": "east", "uid": "uid-east", "resourceVersion": "2"},
			"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"},
				"taints": []any{map[string]any{"key": "maintenance", "value": "true", "effect": effect}}}}}
	}
	accepted := func() *metav1.Condition {
		for _, c := range f.shown().Conditions {
			if c.Type == v1alpha1.ClusterConditionAccepted {
				return &c
			}
		}
		return nil
	}
	f.must(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), withEffect("NoSchedul"))
	want := `Cluster east is invalid: spec.taints[0].effect: Unsupported value: "NoSchedul"`
	if c := accepted(); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Invalid" ||
		!strings.Contains(c.Message, want) || !strings.Contains(c.Message, "takes no new workloads") {
		t.Fatalf("Accepted = %+v, want False saying %q and that the cluster takes no new workloads", c, want)
	}
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	if c := accepted(); c == nil || c.Status != metav1.ConditionFalse || readyOf(f.shown()) != metav1.ConditionTrue {
		t.Errorf("after a heartbeat Accepted = %+v and Ready = %s, want both shown", c, readyOf(f.shown()))
	}

	f.must(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), withEffect("NoSchedule"))
	if c := accepted(); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Accepted once the taint is fixed = %+v, want True", c)
	}

	// A writer that starts reads the spec from the state stream: its first write shows it, and does not drop it.
	restarted := newFleetStatusFixture(t)
	restarted.s.Restore(schemas.TypeClusterChanged, withEffect("NoSchedul"), time.Time{})
	f = restarted
	f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	if c := accepted(); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Accepted written by a restarted writer = %+v, want False", c)
	}
}

// TestSharesShownOnTheClustersLeft: a Divide's shares shown keep those of the clusters still shown, in their
// order, and drop the others'.
func TestSharesShownOnTheClustersLeft(t *testing.T) {
	tests := []struct {
		name, shares string
		clusters     []string
		want         string
	}{
		{"one of three gone", "a=5,b=3,c=2", []string{"a", "c"}, "a=5,c=2"},
		{"the last one left", "a=5,b=3", []string{"b"}, "b=3"},
		{"none left", "a=5,b=3", nil, ""},
		{"not divided", "", []string{"a", "b"}, ""},
		{"a cluster whose name another's begins with", "east=4,east-2=6", []string{"east-2"}, "east-2=6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sharesOn(tt.shares, tt.clusters); got != tt.want {
				t.Errorf("sharesOn(%q, %v) = %q, want %q", tt.shares, tt.clusters, got, tt.want)
			}
		})
	}
}

// TestRestartedWriterShowsARecentHeartbeatReady: a status writer restored from the state stream, whose first
// event of a cluster is not a heartbeat (its APIs, resent), shows the cluster Ready when its restored
// heartbeat is recent, instead of turning it NotReady until the next heartbeat.
func TestRestartedWriterShowsARecentHeartbeatReady(t *testing.T) {
	tests := []struct {
		name      string
		heartbeat time.Duration // how long ago the restored heartbeat was stored
		want      metav1.ConditionStatus
	}{
		{name: "recent heartbeat", heartbeat: 2 * time.Second, want: metav1.ConditionTrue},
		{name: "heartbeat past the timeout", heartbeat: time.Minute, want: metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleetStatusFixture(t)
			at := time.Now().Add(-tt.heartbeat)
			f.s.Restore(schemas.TypeClusterHeartbeat, &schemas.ClusterHeartbeat{Cluster: "east", Time: at}, at)
			f.must(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"), &schemas.ClusterAPIs{Cluster: "east", APIs: []string{"v1/Pod"}})
			if got := readyOf(f.shown()); got != tt.want {
				t.Errorf("Ready = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReplicaRevalidatesPoliciesOnceItLearnsAnRI: status writer replicas share the events of policies and RIs.
// One that validated a policy before it learnt of an RI its replica handled (the RI and the policy applied
// together) wrote a condition without the RI; when it follows the RI, it validates every policy again, or that
// condition would stay.
func TestReplicaRevalidatesPoliciesOnceItLearnsAnRI(t *testing.T) {
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
		"metadata": map[string]any{"name": "widgets", "uid": "uid-widgets", "generation": int64(1), "resourceVersion": "1"},
		"spec": map[string]any{"resourceSelectors": map[string]any{"kinds": []any{
			map[string]any{"group": "example.com", "kind": "Widget"}}}}}}
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{schedulePolicyResource: "SchedulePolicyList"}, policy)
	s := NewStatusWriter(&kube.Clients{Dynamic: dynamic}, karta.NewRegistry(builtins...), slog.New(slog.DiscardHandler))
	message := func() string {
		obj, err := dynamic.Resource(schedulePolicyResource).Get(t.Context(), "widgets", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		if len(conditions) != 1 {
			return ""
		}
		m, _ := conditions[0].(map[string]any)["message"].(string)
		return m
	}
	// This replica handles the policy before it learnt of the RI.
	if err := s.Handle(t.Context(), delivery(t, 1, schemas.TypePolicyChanged, "fleetflow.events.policy.widgets",
		&schemas.ObjectChanged{Object: policy.Object})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(message(), "no ResourceInterface describes Widget.example.com") {
		t.Fatalf("condition before the RI = %q, want it to say no RI describes Widget.example.com", message())
	}
	ri := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "optimization.nvidia.com/v1alpha1", "kind": "ResourceInterface",
		"metadata": map[string]any{"name": "widget", "uid": "uid-ri", "resourceVersion": "1"},
		"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
			"name": "widget", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
			"specDefinition": map[string]any{"podTemplateSpecPath": ".spec.template"}}}}}}
	if err := s.Follow(t.Context(), delivery(t, 2, schemas.TypeResourceInterfaceChanged, "fleetflow.events.resourceinterface.widget", ri)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(message(), "no ResourceInterface") {
		t.Errorf("condition once the RI is followed = %q, want the policy validated again with the RI", message())
	}
}

// TestPolicyConditionSuggestsTheKindAMisspeltOneMeans: a policy naming a kind in another case, in the plural or in
// another group than an RI's is accepted (it may name a kind no RI describes on purpose), and its condition says
// which described kind was likely meant: Kubernetes matches kinds exactly, so such a policy selects nothing.
func TestPolicyConditionSuggestsTheKindAMisspeltOneMeans(t *testing.T) {
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		group, kind string
		second      *v1alpha1.GroupKind
		want        string
	}{
		{name: "another case", group: "kubeflow.org", kind: "pytorchjob",
			want: "(for pytorchjob.kubeflow.org, did you mean kind PyTorchJob?)"},
		{name: "the plural", group: "ray.io", kind: "RayClusters", want: "(for RayClusters.ray.io, did you mean kind RayCluster?)"},
		{name: "another group", group: "kubeflow.io", kind: "PyTorchJob",
			want: "(for PyTorchJob.kubeflow.io, did you mean group kubeflow.org?)"},
		{name: "two kinds", group: "kubeflow.org", kind: "pytorchjob", second: &v1alpha1.GroupKind{Group: "ray.io", Kind: "RayClusters"},
			want: "(for pytorchjob.kubeflow.org, did you mean kind PyTorchJob? for RayClusters.ray.io, did you mean kind RayCluster?)"},
		{name: "a kind no RI is near", group: "example.com", kind: "Widget",
			want: "no ResourceInterface describes Widget.example.com, so those objects are copied as they are and ask nothing of the clusters' capacity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kinds := []any{map[string]any{"group": tt.group, "kind": tt.kind}}
			if tt.second != nil {
				kinds = append(kinds, map[string]any{"group": tt.second.Group, "kind": tt.second.Kind})
			}
			policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
				"metadata": map[string]any{"name": "p", "uid": "uid-p", "generation": int64(1), "resourceVersion": "1"},
				"spec":     map[string]any{"resourceSelectors": map[string]any{"kinds": kinds}}}}
			dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{schedulePolicyResource: "SchedulePolicyList"}, policy)
			s := NewStatusWriter(&kube.Clients{Dynamic: dynamic}, karta.NewRegistry(builtins...), slog.New(slog.DiscardHandler))
			if err := s.Handle(t.Context(), delivery(t, 1, schemas.TypePolicyChanged, "fleetflow.events.policy.p",
				&schemas.ObjectChanged{Object: policy.Object})); err != nil {
				t.Fatal(err)
			}
			obj, err := dynamic.Resource(schedulePolicyResource).Get(t.Context(), "p", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			if len(conditions) != 1 {
				t.Fatalf("conditions %v, want the Accepted one", conditions)
			}
			c := conditions[0].(map[string]any)
			message, _ := c["message"].(string)
			if c["status"] != "True" || !strings.HasSuffix(message, tt.want) {
				t.Errorf("condition %v %q, want True ending in %q", c["status"], message, tt.want)
			}
		})
	}
}

// widgetRIObject builds a user ResourceInterface for example.com/v1 Widget called name, as applied to the control
// plane.
func widgetRIObject(name, created string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "optimization.nvidia.com/v1alpha1", "kind": "ResourceInterface",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name, "generation": int64(1), "resourceVersion": "1",
			"creationTimestamp": created},
		"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
			"name": "widget", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
			"specDefinition": map[string]any{"podTemplateSpecPath": ".spec.template"}}}}}}
}

// TestResourceInterfaceConditionFollowsWhichIsInForce: of two user RIs of one kind, the one created last is in
// force. The first said it was in force when it was applied, and went on saying so once the second took its
// place; it now says it is superseded, also when published again after the second, and in force again (naming
// the RI it is used instead of in the singular) once the second is deleted.
func TestResourceInterfaceConditionFollowsWhichIsInForce(t *testing.T) {
	first, second := widgetRIObject("widget-first", "2026-12-01T14:00:00Z"), widgetRIObject("widget-second", "2026-12-01T14:01:00Z")
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{schedulePolicyResource: "SchedulePolicyList"}, first.DeepCopy(), second.DeepCopy())
	s := NewStatusWriter(&kube.Clients{Dynamic: dynamic}, karta.NewRegistry(), slog.New(slog.DiscardHandler))
	accepted := func(name string) (status, reason, message string) {
		t.Helper()
		obj, err := dynamic.Resource(resourceInterfaceResource).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			if m, _ := c.(map[string]any); m["type"] == RIConditionAccepted {
				status, _ = m["status"].(string)
				reason, _ = m["reason"].(string)
				message, _ = m["message"].(string)
			}
		}
		return status, reason, message
	}
	seq := uint64(0)
	handle := func(eventType, name string, payload schemas.Payload) {
		t.Helper()
		seq++
		if err := s.Handle(t.Context(), delivery(t, seq, eventType, "fleetflow.events.resourceinterface."+name, payload)); err != nil {
			t.Fatal(err)
		}
	}
	type want struct{ status, reason, message string }
	check := func(step, name string, w want) {
		t.Helper()
		status, reason, message := accepted(name)
		if status != w.status || reason != w.reason || !strings.Contains(message, w.message) {
			t.Errorf("%s: %s shows %s/%s %q, want %s/%s containing %q", step, name, status, reason, message, w.status, w.reason, w.message)
		}
	}
	handle(schemas.TypeResourceInterfaceChanged, "widget-first", &schemas.ObjectChanged{Object: first.Object})
	handle(schemas.TypeResourceInterfaceChanged, "widget-second", &schemas.ObjectChanged{Object: second.Object})
	check("second applied", "widget-second", want{"True", "InForce",
		"in force for Widget.example.com/v1; used instead of ResourceInterface widget-first, which describes the same kind"})
	check("second applied", "widget-first", want{"False", "Superseded",
		"not in force: ResourceInterface widget-second, created later, is used for Widget.example.com/v1 instead"})

	// An edit of the first (or its event published again at a restart) does not put it back in force.
	handle(schemas.TypeResourceInterfaceChanged, "widget-first", &schemas.ObjectChanged{Object: first.Object})
	check("first published again", "widget-second", want{"True", "InForce", "in force for Widget.example.com/v1"})
	check("first published again", "widget-first", want{"False", "Superseded", "ResourceInterface widget-second, created later"})

	if err := dynamic.Resource(resourceInterfaceResource).Delete(t.Context(), "widget-second", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	handle(schemas.TypeResourceInterfaceDeleted, "widget-second", &schemas.ObjectDeleted{Workload: schemas.RefOf(second.Object)})
	check("second deleted", "widget-first", want{"True", "InForce", "in force for Widget.example.com/v1"})
}

func delivery(t *testing.T, seq uint64, eventType, subject string, payload schemas.Payload) bus.Delivery {
	t.Helper()
	e, err := codec.NewEvent(eventType, "/test", subject, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq, Attempt: 1}
}
