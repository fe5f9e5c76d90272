package app

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestStatePrunerRemovesWhatAGoneWorkloadLeft: once a deleted workload is gone, the state stream loses what it
// kept of it (its deletion, verdict, status, applier reports and Delete) but the report of a Delete an applier
// gave up on and an Apply with no Delete after it (both say a copy may be left), and keeps what belongs to
// others: a workload created again under the same name, and an unrelated one.
func TestStatePrunerRemovesWhatAGoneWorkloadLeft(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := OpenTestBus(t)
	published := 0
	publish := func(eventType, subject, id string, payload schemas.Payload) {
		t.Helper()
		PublishEvent(t, b, eventType, subject, id, payload)
		published++
	}
	ref := func(name, uid string) schemas.ObjectRef {
		return schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: name, UID: uid}
	}
	gone, again, other := ref("train", "uid-1"), ref("train", "uid-2"), ref("eval", "uid-3")

	// What the workload that is gone left: placed on east, deleted, its copy deleted.
	publish(schemas.TypePlacementVerdict, schemas.VerdictSubject(gone), "verdict-1",
		&schemas.PlacementVerdict{Workload: gone, Sequence: 1, Status: schemas.VerdictUnschedulable})
	publish(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", gone), "status-1",
		&schemas.WorkloadStatus{Cluster: "east", Workload: gone, Status: map[string]any{"phase": "Running"}})
	publish(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(gone), "deleted-1", &schemas.ObjectDeleted{Workload: gone})
	publish(schemas.TypePlacementDecided, schemas.DecisionSubject("east", gone), "decision-1",
		&schemas.PlacementDecided{DecisionID: "decision-1", Workload: gone, Cluster: "east", Action: schemas.ActionDelete, Sequence: 3})
	publish(schemas.TypePlacementApplied, schemas.PlacementSubject("east", gone), "applied-1",
		&schemas.PlacementApplied{DecisionID: "decision-1", Workload: gone, Cluster: "east", Action: schemas.ActionDelete, Sequence: 3})
	// Its copy on north, down at the time, may have survived: the applier's report that it gave up stays.
	publish(schemas.TypePlacementFailed, schemas.PlacementSubject("north", gone), "failed-1",
		&schemas.PlacementFailed{DecisionID: "decision-2", Workload: gone, Cluster: "north", Action: schemas.ActionDelete, Sequence: 3,
			Error: "the cluster did not answer", Attempts: schemas.MaxDeliver})
	// An Apply to south that no Delete followed in the stream: the copy may be there.
	publish(schemas.TypePlacementDecided, schemas.DecisionSubject("south", gone), "decision-3",
		&schemas.PlacementDecided{DecisionID: "decision-3", Workload: gone, Cluster: "south", Action: schemas.ActionApply, Sequence: 2,
			Object: map[string]any{"apiVersion": gone.APIVersion, "kind": gone.Kind, "metadata": map[string]any{"name": gone.Name, "namespace": gone.Namespace}}})
	// An Apply its applier on west gave up on: no copy was made.
	publish(schemas.TypePlacementFailed, schemas.PlacementSubject("west", gone), "failed-3",
		&schemas.PlacementFailed{DecisionID: "decision-4", Workload: gone, Cluster: "west", Action: schemas.ActionApply, Sequence: 2,
			Error: "forbidden", Attempts: 1})
	// A workload created again under the same name, running on west, and an unrelated workload on east.
	publish(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("west", again), "status-2",
		&schemas.WorkloadStatus{Cluster: "west", Workload: again, Status: map[string]any{"phase": "Running"}})
	publish(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("east", other), "status-3",
		&schemas.WorkloadStatus{Cluster: "east", Workload: other, Status: map[string]any{"phase": "Running"}})

	stream, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	stateSubjects := func() []string {
		t.Helper()
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(">"))
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(info.State.Subjects))
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; the state stream holds %v", what, stateSubjects())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("every message sourced", func() bool { return len(stateSubjects()) == published })

	recorder := &purgeRecorder{Stream: stream}
	pruner := newStatePruner(recorder, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	go pruner.run(ctx)
	pruner.add([]schemas.ObjectRef{gone}, lifecycle.GoneFleet{})
	want := []string{schemas.WorkloadStatusSubject("east", other), schemas.WorkloadStatusSubject("west", again),
		schemas.PlacementSubject("north", gone), schemas.DecisionSubject("south", gone)}
	slices.Sort(want)
	waitFor("the gone workload's state pruned", func() bool { return slices.Equal(stateSubjects(), want) })
	// The deletion goes last, so a prune cut short leaves the workload deleted for the next rebuild to see.
	if purged := recorder.purged(); len(purged) != 6 || purged[len(purged)-1] != schemas.WorkloadSubject(gone) {
		t.Errorf("purged %v, want six subjects, %s last", purged, schemas.WorkloadSubject(gone))
	}
}

// purgeRecorder is a stream that records the subjects purged through it.
type purgeRecorder struct {
	jetstream.Stream
	mu       sync.Mutex
	subjects []string
}

func (r *purgeRecorder) Purge(ctx context.Context, opts ...jetstream.StreamPurgeOpt) error {
	var req jetstream.StreamPurgeRequest
	for _, opt := range opts {
		if err := opt(&req); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.subjects = append(r.subjects, req.Subject)
	r.mu.Unlock()
	return r.Stream.Purge(ctx, opts...)
}

func (r *purgeRecorder) purged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.subjects)
}

// TestStatePrunerLeavesAWorkloadThatIsThere: a workload whose last message on its subject is a change keeps it,
// even when reported gone: a change says the workload is there.
func TestStatePrunerLeavesAWorkloadThatIsThere(t *testing.T) {
	ctx := t.Context()
	b := OpenTestBus(t)
	object := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "team-a", "uid": "uid-web", "resourceVersion": "1"}}
	changed := &schemas.ObjectChanged{Object: object}
	ref := changed.Ref()
	PublishEvent(t, b, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref), "changed-1", changed)
	stream, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := stream.GetLastMsgForSubject(ctx, schemas.WorkloadSubject(ref)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the workload's change never reached the state stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	removed, err := newStatePruner(stream, 0, slog.New(slog.DiscardHandler)).prune(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 0 {
		t.Errorf("pruned %d messages of a workload whose last state is a change", removed)
	}
	if _, err := stream.GetLastMsgForSubject(ctx, schemas.WorkloadSubject(ref)); err != nil {
		t.Errorf("the workload's change is gone from the state stream: %v", err)
	}
}

// TestStatePrunerRemovesNodeDeletions: a node's deletion goes from the state stream, unless a node of that name
// came back since, whose state stays, as does every node that is there.
func TestStatePrunerRemovesNodeDeletions(t *testing.T) {
	ctx := t.Context()
	b := OpenTestBus(t)
	publish := func(eventType, subject, id string, payload schemas.Payload) {
		t.Helper()
		PublishEvent(t, b, eventType, subject, id, payload)
	}
	state := func(name string) *schemas.NodeState {
		return &schemas.NodeState{Cluster: "east", Name: name, Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
	}
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "gone"), "gone-1", state("gone"))
	publish(schemas.TypeNodeDeleted, schemas.NodeSubject("east", "gone"), "gone-2", &schemas.NodeDeleted{Cluster: "east", Name: "gone"})
	publish(schemas.TypeNodeDeleted, schemas.NodeSubject("east", "back"), "back-1", &schemas.NodeDeleted{Cluster: "east", Name: "back"})
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "back"), "back-2", state("back"))
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "there"), "there-1", state("there"))

	stream, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	nodeSubjects := func() []string {
		t.Helper()
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter(schemas.NodeSubject("east", "*")))
		if err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(info.State.Subjects))
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(nodeSubjects()) != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the state stream holds %v, want the three nodes' subjects", nodeSubjects())
		}
		time.Sleep(10 * time.Millisecond)
	}
	pruner := newStatePruner(stream, 0, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		node   string
		pruned bool
	}{{"gone", true}, {"back", false}, {"there", false}} {
		pruned, err := pruner.pruneNode(ctx, schemas.NodeDeleted{Cluster: "east", Name: tc.node})
		if err != nil {
			t.Fatal(err)
		}
		if pruned != tc.pruned {
			t.Errorf("node %s pruned = %t, want %t", tc.node, pruned, tc.pruned)
		}
	}
	if got, want := nodeSubjects(), []string{schemas.NodeSubject("east", "back"), schemas.NodeSubject("east", "there")}; !slices.Equal(got, want) {
		t.Errorf("node subjects left = %v, want %v", got, want)
	}
}

// TestStatePrunerRemovesWhatADeletedClusterLeft: what the state stream holds of a deleted cluster goes (its
// aspects, nodes, workload statuses, applier reports and decisions), stored before its deletion or after it (the
// Delete the placer sent as it failed a workload over, the report of it, what its producer sent until it
// stopped), then the deletion; what it sends after that goes at the next prune. Every other cluster stays, as
// does a cluster registered again under its name.
func TestStatePrunerRemovesWhatADeletedClusterLeft(t *testing.T) {
	ctx := t.Context()
	b := OpenTestBus(t)
	published := 0
	publish := func(eventType, subject string, payload schemas.Payload) {
		t.Helper()
		published++
		PublishEvent(t, b, eventType, subject, subject+"/"+strconv.Itoa(published), payload)
	}
	job := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: "train", UID: "uid-train"}
	clusterObject := func(name string) *schemas.ObjectChanged {
		return &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
			"metadata": map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "1"},
			"spec":     map[string]any{"kubeconfigSecretRef": map[string]any{"name": name, "namespace": "fleetflow-system"}}}}
	}
	clusterDeleted := func(name string) *schemas.ObjectDeleted {
		return &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster", Name: name, UID: "uid-" + name}}
	}
	decision := func(cluster string, action schemas.DecisionAction, seq uint64) *schemas.PlacementDecided {
		d := &schemas.PlacementDecided{DecisionID: "d", Workload: job, Cluster: cluster, Action: action, Sequence: seq}
		if action == schemas.ActionApply {
			d.Object = map[string]any{"apiVersion": job.APIVersion, "kind": job.Kind, "metadata": map[string]any{"name": job.Name, "namespace": job.Namespace}}
		}
		return d
	}
	for _, c := range []string{"burst", "east", "back"} {
		publish(schemas.TypeClusterChanged, schemas.ClusterSpecSubject(c), clusterObject(c))
		publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(c), &schemas.ClusterHeartbeat{Cluster: c, Time: time.Now()})
		publish(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(c), &schemas.ClusterAPIs{Cluster: c, APIs: []string{"kubeflow.org/v1/PyTorchJob"}})
		publish(schemas.TypeNodeChanged, schemas.NodeSubject(c, "n1"), &schemas.NodeState{Cluster: c, Name: "n1", Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	}
	publish(schemas.TypePlacementDecided, schemas.DecisionSubject("burst", job), decision("burst", schemas.ActionApply, 1))
	publish(schemas.TypePlacementApplied, schemas.PlacementSubject("burst", job), &schemas.PlacementApplied{DecisionID: "d",
		Workload: job, Cluster: "burst", Action: schemas.ActionApply, Sequence: 1})
	publish(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("burst", job), &schemas.WorkloadStatus{Cluster: "burst", Workload: job})
	publish(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("burst"), clusterDeleted("burst"))
	publish(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("back"), clusterDeleted("back"))
	publish(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("back"), clusterObject("back"))

	stream, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	lastType := func(subject string) string {
		msg, err := stream.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return ""
		}
		return msg.Header.Get("ce-type")
	}
	// The Delete sent as the placer failed the job over goes to the state stream once burst's deletion is
	// there: the two come through different sources, which copy in their own time.
	for deadline := time.Now().Add(10 * time.Second); lastType(schemas.ClusterSpecSubject("burst")) != schemas.TypeClusterDeleted; {
		if time.Now().After(deadline) {
			t.Fatal("burst's deletion never reached the state stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	publish(schemas.TypePlacementDecided, schemas.DecisionSubject("burst", job), decision("burst", schemas.ActionDelete, 2))
	deleteID := schemas.DecisionSubject("burst", job) + "/" + strconv.Itoa(published)
	deleteCopied := func() bool {
		msg, err := stream.GetLastMsgForSubject(ctx, schemas.DecisionSubject("burst", job))
		return err == nil && msg.Header.Get("ce-id") == deleteID
	}
	// What burst's runner sent after its deletion, while its applier carried out that Delete.
	beatAfterDeletion := func() {
		t.Helper()
		publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("burst"), &schemas.ClusterHeartbeat{Cluster: "burst", Time: time.Now()})
	}
	beatAfterDeletion()
	publish(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("burst"), &schemas.ClusterAPIs{Cluster: "burst", APIs: []string{"v1/Pod"}})
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("burst", "n2"), &schemas.NodeState{Cluster: "burst", Name: "n2", Ready: true,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	publish(schemas.TypePlacementApplied, schemas.PlacementSubject("burst", job), &schemas.PlacementApplied{DecisionID: "d",
		Workload: job, Cluster: "burst", Action: schemas.ActionDelete, Sequence: 2})
	publish(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("burst", job), &schemas.WorkloadStatus{Cluster: "burst", Workload: job, Gone: true})
	subjectsOf := func(cluster string) []string {
		t.Helper()
		var subjects []string
		for _, filter := range schemas.ClusterStateFilters(cluster) {
			info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
			if err != nil {
				t.Fatal(err)
			}
			subjects = append(subjects, slices.Collect(maps.Keys(info.State.Subjects))...)
		}
		slices.Sort(subjects)
		return subjects
	}
	caughtUp := func() bool {
		return len(subjectsOf("burst")) == 8 && len(subjectsOf("back")) == 4 && deleteCopied() &&
			lastType(schemas.ClusterSpecSubject("back")) == schemas.TypeClusterChanged &&
			lastType(schemas.WorkloadStatusSubject("burst", job)) == schemas.TypeWorkloadStatus &&
			lastType(schemas.PlacementSubject("burst", job)) == schemas.TypePlacementApplied
	}
	for deadline := time.Now().Add(10 * time.Second); !caughtUp(); {
		if time.Now().After(deadline) {
			t.Fatalf("the state stream never caught up: burst %v, back %v", subjectsOf("burst"), subjectsOf("back"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	east, back := subjectsOf("east"), subjectsOf("back")

	recorder := &purgeRecorder{Stream: stream}
	pruner := newStatePruner(recorder, 0, slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		cluster string
		pruned  bool
	}{{"burst", true}, {"east", false}, {"back", false}} {
		pruned, err := pruner.pruneCluster(ctx, tc.cluster)
		if err != nil {
			t.Fatal(err)
		}
		if pruned != tc.pruned {
			t.Errorf("cluster %s pruned = %t, want %t", tc.cluster, pruned, tc.pruned)
		}
	}
	if got := subjectsOf("burst"); len(got) != 0 {
		t.Errorf("burst's subjects left = %v, want none", got)
	}
	// The deletion goes last, so a prune cut short leaves the cluster deleted for the next rebuild to see.
	if purged := recorder.purged(); len(purged) == 0 || purged[len(purged)-1] != schemas.ClusterSpecSubject("burst") {
		t.Errorf("purged %v, want %s last", purged, schemas.ClusterSpecSubject("burst"))
	}

	// Its deletion pruned, burst beats once more (a producer nobody stopped): the placer, which saw it deleted,
	// reports it gone again, and that goes too.
	beatAfterDeletion()
	for deadline := time.Now().Add(10 * time.Second); len(subjectsOf("burst")) != 1; {
		if time.Now().After(deadline) {
			t.Fatalf("burst's late heartbeat never reached the state stream: %v", subjectsOf("burst"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pruned, err := pruner.pruneCluster(ctx, "burst"); err != nil || !pruned {
		t.Errorf("burst pruned again = %t, %v; want true", pruned, err)
	}
	if got := subjectsOf("burst"); len(got) != 0 {
		t.Errorf("burst's subjects left after the second prune = %v, want none", got)
	}
	if got := subjectsOf("east"); !slices.Equal(got, east) {
		t.Errorf("east's subjects = %v, want %v untouched", got, east)
	}
	if got := subjectsOf("back"); !slices.Equal(got, back) {
		t.Errorf("back's subjects = %v, want %v untouched", got, back)
	}
}

// TestStatePrunerQueuesADeletedClusterOnce: a deleted cluster reported again before its prune ran (it sent
// something after its deletion) is pruned once, by the prune already queued, which comes after what the placer
// saw; reported once that prune ran, it is queued again.
func TestStatePrunerQueuesADeletedClusterOnce(t *testing.T) {
	pruner := newStatePruner(nil, time.Minute, slog.New(slog.DiscardHandler))
	pruner.add(nil, lifecycle.GoneFleet{Clusters: []string{"burst"}})
	pruner.add(nil, lifecycle.GoneFleet{Clusters: []string{"burst", "east"}})
	pruner.add(nil, lifecycle.GoneFleet{Clusters: []string{"east"}})
	clusters := func(targets []pruneTarget) []string {
		var names []string
		for _, target := range targets {
			names = append(names, target.cluster)
		}
		return names
	}
	if got := clusters(pruner.queue); !slices.Equal(got, []string{"burst", "east"}) {
		t.Fatalf("queued %v, want burst and east once each", got)
	}
	due, _ := pruner.takeDue(time.Now().Add(2 * time.Minute))
	if got := clusters(due); !slices.Equal(got, []string{"burst", "east"}) {
		t.Fatalf("due %v, want burst and east", got)
	}
	pruner.add(nil, lifecycle.GoneFleet{Clusters: []string{"burst"}})
	if got := clusters(pruner.queue); !slices.Equal(got, []string{"burst"}) {
		t.Errorf("queued after the prune ran %v, want burst again", got)
	}
}
