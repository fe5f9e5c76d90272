package app_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestPlacerStartsOverWhenItsConsumerIsDeleted: a placer whose durable consumer is deleted under it does not
// go on receiving nothing: it says so, starts over as a new leader would, creates the consumer again, and
// takes the events published after.
func TestPlacerStartsOverWhenItsConsumerIsDeleted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := app.OpenTestBus(t)
	logs := &logbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- app.RunPlacer(ctx, b, placer.PlacerConfig{}, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	stream, cfg := streams.PlacerConsumer()
	consumerExists := func() bool {
		_, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
		return err == nil
	}
	eventually(t, "the placer's consumer", consumerExists)
	if err := b.JetStream.DeleteConsumer(ctx, stream, cfg.Durable); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the placer starting over", func() bool { return logs.Contains("starting over") })
	eventually(t, "the placer's consumer created again", consumerExists)

	ns := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team-a", "uid": "uid-team-a", "resourceVersion": "1"}}}
	seq := app.PublishEvent(t, b, schemas.TypeNamespaceChanged, schemas.NamespaceSubject("team-a"), "ns-team-a-1", ns)
	eventually(t, "the event taken by the new consumer", func() bool {
		c, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.AckFloor.Stream >= seq
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("placer ended with %v", err)
	}
}

// TestPlacerPrunesTheStateOfDeletedWorkloads: a workload placed, then deleted on the control plane, leaves
// nothing in the state stream once its Delete is stored and the grace period has passed, while the workload
// next to it keeps its state; a deleted node leaves nothing either. A placer that starts after the deletions
// prunes what an earlier one left.
func TestPlacerPrunesTheStateOfDeletedWorkloads(t *testing.T) {
	for _, tc := range []struct {
		name string
		// restart deletes the workload under a placer that prunes nothing within the test, then starts another.
		restart bool
	}{
		{name: "while running"},
		{name: "after a restart", restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newStateFixture(t)
			f.seedFleet()
			grace := 10 * time.Millisecond
			if tc.restart {
				grace = time.Hour
			}
			stop := f.runPlacer(grace)
			web, api := deployment("web"), deployment("api")
			for _, w := range []*schemas.ObjectChanged{web, api} {
				f.publish(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(w.Ref()), "changed-"+w.Ref().Name, w)
			}
			eventually(t, "web placed on east", f.holds(web.Ref(), schemas.DecisionSubject("east", web.Ref())))
			eventually(t, "api placed on east", f.holds(api.Ref(), schemas.DecisionSubject("east", api.Ref())))

			f.publish(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(web.Ref()), "deleted-web", &schemas.ObjectDeleted{Workload: web.Ref()})
			f.publish(schemas.TypeNodeDeleted, schemas.NodeSubject("east", "n2"), "node-2-deleted", &schemas.NodeDeleted{Cluster: "east", Name: "n2"})
			n2 := func() bool {
				_, err := f.state.GetLastMsgForSubject(f.ctx, schemas.NodeSubject("east", "n2"))
				return err == nil
			}
			if tc.restart {
				eventually(t, "web's Delete stored", func() bool {
					msg, err := f.state.GetLastMsgForSubject(f.ctx, schemas.DecisionSubject("east", web.Ref()))
					return err == nil && msg.Header.Get("ce-type") == schemas.TypePlacementDecided &&
						strings.Contains(msg.Header.Get("ce-id"), "/"+string(schemas.ActionDelete)+"/")
				})
				eventually(t, "n2's deletion stored", n2)
				stop()
				if len(f.stateOf(web.Ref())) == 0 || !n2() {
					t.Fatal("web's state or n2's deletion was pruned before the grace period passed")
				}
				stop = f.runPlacer(10 * time.Millisecond)
			}
			eventually(t, "web's state pruned", func() bool { return len(f.stateOf(web.Ref())) == 0 })
			eventually(t, "n2's deletion pruned", func() bool { return !n2() })
			if got := f.stateOf(api.Ref()); !slices.Contains(got, schemas.WorkloadSubject(api.Ref())) ||
				!slices.Contains(got, schemas.DecisionSubject("east", api.Ref())) {
				t.Errorf("api's state = %v, want its change and its decision kept", got)
			}
			stop()
		})
	}
}

// TestPlacerStartedOverKeepsAPrunedWorkloadGone: a placer whose consumer is created again replays the whole
// history of the events stream. Once a deleted workload's state is pruned, nothing in the state stream says
// its old events are applied, yet the replay must not place it again: the rebuilt placer skips every event
// the state stream had copied. The streams' duplicate window is cut to JetStream's least, and the replay
// starts once it has passed, so replayed decisions would not merely be dropped as duplicates of the first ones.
func TestPlacerStartedOverKeepsAPrunedWorkloadGone(t *testing.T) {
	ctx := t.Context()
	opts := streams.DefaultOptions()
	opts.DuplicateWindow = 100 * time.Millisecond // JetStream's least
	b, err := app.OpenBus(ctx, app.BusOptions{DataDir: t.TempDir(), Streams: opts}, t.Name(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	state, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	f := &stateFixture{t: t, ctx: ctx, b: b, state: state}
	f.seedFleet()
	stop := f.runPlacer(10 * time.Millisecond)
	defer stop()
	web := deployment("web")
	f.publish(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), "web-1", web)
	eventually(t, "web placed", f.holds(web.Ref(), schemas.DecisionSubject("east", web.Ref())))
	f.publish(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(web.Ref()), "web-deleted", &schemas.ObjectDeleted{Workload: web.Ref()})
	eventually(t, "web's state pruned", func() bool { return len(f.stateOf(web.Ref())) == 0 })
	decisions, err := b.JetStream.Stream(ctx, schemas.StreamDecisions)
	if err != nil {
		t.Fatal(err)
	}
	before, err := decisions.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Decisions proper, not the leadership records a placer starting over appends to the fence subject.
	decided := func() uint64 { return e2eenv.Total(e2eenv.ClusterDecisions(t, b.JetStream)) }
	decidedBefore := decided()
	eventually(t, "the duplicate window passed since the last decision", func() bool {
		return time.Since(before.State.LastTime) > 2*opts.DuplicateWindow
	})

	stream, cfg := streams.PlacerConsumer()
	if err := b.JetStream.DeleteConsumer(ctx, stream, cfg.Durable); err != nil {
		t.Fatal(err)
	}
	events, err := b.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	eventsInfo, err := events.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the history replayed to the placer's new consumer", func() bool {
		c, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.AckFloor.Stream >= eventsInfo.State.LastSeq && info.NumAckPending == 0
	})
	if after := decided(); after != decidedBefore {
		t.Errorf("the replay stored %d decisions, want none", after-decidedBefore)
	}
}

// stateFixture is an embedded bus on which tests run placers and read the state stream.
type stateFixture struct {
	t     *testing.T
	ctx   context.Context
	b     *app.Bus
	state jetstream.Stream
}

func newStateFixture(t *testing.T) *stateFixture {
	t.Helper()
	ctx := t.Context()
	b := app.OpenTestBus(t)
	state, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	return &stateFixture{t: t, ctx: ctx, b: b, state: state}
}

// runPlacer starts a placer pruning the state of gone workloads after grace; stop ends it.
func (f *stateFixture) runPlacer(grace time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() {
		done <- app.RunPlacer(ctx, f.b, placer.PlacerConfig{StatePruneGrace: grace}, slog.New(slog.DiscardHandler))
	}()
	return func() {
		cancel()
		if err := <-done; err != nil {
			f.t.Errorf("placer ended with %v", err)
		}
	}
}

func (f *stateFixture) publish(eventType, subject, id string, payload schemas.Payload) {
	f.t.Helper()
	app.PublishEvent(f.t, f.b, eventType, subject, id, payload)
}

// seedFleet publishes a policy taking every workload and a Ready cluster east of two 8-CPU nodes.
func (f *stateFixture) seedFleet() {
	policy := object("fleetflow.io/v1alpha1", "SchedulePolicy", "", "any", map[string]any{"spec": map[string]any{}})
	f.publish(schemas.TypePolicyChanged, schemas.PolicySubject(policy.Ref()), "policy-1", policy)
	cluster := object("fleetflow.io/v1alpha1", "Cluster", "", "east", map[string]any{"spec": map[string]any{
		"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"}}})
	f.publish(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), "cluster-1", cluster)
	f.publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), "heartbeat-1",
		&schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	f.publish(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"), "apis-1",
		&schemas.ClusterAPIs{Cluster: "east", APIs: []string{"apps/v1/Deployment"}})
	for _, n := range []string{"n1", "n2"} {
		f.publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", n), "node-"+n, &schemas.NodeState{Cluster: "east", Name: n,
			Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}})
	}
}

// stateOf lists the subjects the state stream holds about ref.
func (f *stateFixture) stateOf(ref schemas.ObjectRef) []string {
	f.t.Helper()
	var subjects []string
	for _, filter := range schemas.WorkloadStateFilters(ref) {
		info, err := f.state.Info(f.ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			f.t.Fatal(err)
		}
		subjects = append(subjects, slices.Collect(maps.Keys(info.State.Subjects))...)
	}
	slices.Sort(subjects)
	return subjects
}

func (f *stateFixture) holds(ref schemas.ObjectRef, subject string) func() bool {
	return func() bool { return slices.Contains(f.stateOf(ref), subject) }
}

func object(apiVersion, kind, namespace, name string, extra map[string]any) *schemas.ObjectChanged {
	meta := map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "1"}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	maps.Copy(obj, extra)
	return &schemas.ObjectChanged{Object: obj}
}

func deployment(name string) *schemas.ObjectChanged {
	return object("apps/v1", "Deployment", "team-a", name, map[string]any{"spec": map[string]any{"replicas": 1,
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web",
			"resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}})
}
