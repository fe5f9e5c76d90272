package placer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// rebuildFixture is an embedded JetStream whose streams hold one Ready cluster "east" with a node, a policy
// taking every workload, and the Deployment web: what a restarted placer must find.
type rebuildFixture struct {
	srv *bus.Embedded
	js  jetstream.JetStream
	web *schemas.ObjectChanged
	ctx context.Context
	log *slog.Logger
}

func newRebuildFixture(t *testing.T) *rebuildFixture {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	f := &rebuildFixture{srv: srv, ctx: ctx, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	producer, js, err := bus.Connect(srv.ClientURL(), "producer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(producer.Close)
	f.js = js
	if err := bus.ProvisionStreams(ctx, js, streams.DefaultOptions(), f.log); err != nil {
		t.Fatal(err)
	}
	publish := func(eventType, subject string, payload schemas.Payload) {
		t.Helper()
		f.publish(t, eventType, subject, subject, payload)
	}
	policy := eventtest.Policy("all", map[string]any{})
	publish(schemas.TypePolicyChanged, schemas.PolicySubject(policy.Ref()), policy)
	publish(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), eventtest.Cluster("east", nil))
	publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	publish(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"), &schemas.ClusterAPIs{Cluster: "east", APIs: []string{"apps/v1/Deployment"}})
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), eventtest.Node("east", "n1", "8"))
	f.web = deployment("web")
	publish(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(f.web.Ref()), f.web)
	return f
}

// publish publishes an event as a producer would, with id as its dedupe id.
func (f *rebuildFixture) publish(t *testing.T, eventType, subject, id string, payload schemas.Payload) {
	t.Helper()
	e, err := codec.NewEvent(eventType, "/test", subject, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewPublisher(f.js).Publish(f.ctx, subject, e); err != nil {
		t.Fatal(err)
	}
}

// published is how many events newRebuildFixture published.
const published = 6

// waitForState waits until the state stream holds every published event.
func (f *rebuildFixture) waitForState(t *testing.T) { f.waitForStateOf(t, published, 0) }

// waitForStateOf waits until the state stream holds msgs messages, the last of them at lastSeq or later.
func (f *rebuildFixture) waitForStateOf(t *testing.T, msgs, lastSeq uint64) {
	t.Helper()
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := state.Info(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == msgs && info.State.LastSeq >= lastSeq {
			return
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("the state stream holds %d messages up to %d, want %d up to %d", info.State.Msgs, info.State.LastSeq, msgs, lastSeq)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rebuild rebuilds a new placer connected at url, checks it found everything published, and returns it.
func (f *rebuildFixture) rebuild(t *testing.T, url string) *Placer {
	t.Helper()
	p := f.rebuilt(t, url)
	if snap := p.Snapshot(); snap.Cluster("east") == nil || !inForce(p, "all") || !p.ctrl.Tracks(idOf(f.web.Ref())) {
		t.Errorf("rebuilt view misses what the streams hold: clusters %d, policies %d, workloads %d",
			len(snap.Clusters()), len(snap.Policies()), p.ctrl.Tracking())
	}
	return p
}

// rebuilt is a new placer connected at url, rebuilt from the streams.
func (f *rebuildFixture) rebuilt(t *testing.T, url string) *Placer {
	t.Helper()
	conn, placerJS, err := bus.Connect(url, "placer", nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlacer(bus.NewPublisher(placerJS), karta.NewRegistry(builtins...), PlacerConfig{}, f.log)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Rebuild(f.ctx, placerJS); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	return p
}

// TestRebuildSurvivesALostPullRequest: a restarted placer whose first pull request on the state stream goes
// missing still reads the whole stream, pulling again once the heartbeats it asked for do not come.
func TestRebuildSurvivesALostPullRequest(t *testing.T) {
	f := newRebuildFixture(t)
	f.waitForState(t)
	dropper := bustest.StartPullDropper(t, strings.TrimPrefix(f.srv.ClientURL(), "nats://"), 1)
	f.rebuild(t, dropper.URL())
	if got := dropper.Dropped(); got != 1 {
		t.Errorf("%d pull requests dropped, want the first one", got)
	}
}

// TestRebuildWaitsForTheStateStreamToCatchUp: a state stream that has not yet heard from its sources (new, or
// just restarted with the server) reports no lag; the rebuild waits until it has copied what the events
// stream holds instead of reading it half empty.
func TestRebuildWaitsForTheStateStreamToCatchUp(t *testing.T) {
	f := newRebuildFixture(t)
	f.waitForState(t)
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	cfg := state.CachedInfo().Config
	if err := f.js.DeleteStream(f.ctx, schemas.StreamState); err != nil {
		t.Fatal(err)
	}
	if _, err := f.js.CreateStream(f.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	f.rebuild(t, f.srv.ClientURL())
}

func TestSourcesBehind(t *testing.T) {
	tests := []struct {
		name       string
		source     jetstream.StreamSourceInfo
		originLast uint64
		behind     bool
	}{
		{name: "not heard from, origin holds messages", source: jetstream.StreamSourceInfo{Active: -1}, originLast: 6, behind: true},
		{name: "not heard from, origin empty", source: jetstream.StreamSourceInfo{Active: -1}, originLast: 0},
		{name: "not heard from, already stored up to the origin's last", source: jetstream.StreamSourceInfo{Active: -1, Seq: 6}, originLast: 6},
		{name: "heard from, no lag", source: jetstream.StreamSourceInfo{Active: time.Second, Seq: 4}, originLast: 6},
		{name: "heard from, lagging", source: jetstream.StreamSourceInfo{Active: time.Second, Seq: 4, Lag: 2}, originLast: 6, behind: true},
		{name: "stored past the last seen at the start", source: jetstream.StreamSourceInfo{Active: time.Second, Seq: 9, Lag: 1}, originLast: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.source.Name = schemas.StreamEvents
			behind := sourcesBehind([]*jetstream.StreamSourceInfo{&tt.source}, map[string]uint64{schemas.StreamEvents: tt.originLast})
			if got := len(behind) > 0; got != tt.behind {
				t.Errorf("behind = %v (%v), want %v", got, behind, tt.behind)
			}
		})
	}
}

// TestRebuildDeletesAgainWhatAnApplierGaveUpOn: all a restarted placer may find of a deleted workload is an
// applier's report that it gave up on its Delete (the rest was pruned once the workload was gone). The copy
// may have survived, so the placer sends the Delete again, its cluster being Ready.
func TestRebuildDeletesAgainWhatAnApplierGaveUpOn(t *testing.T) {
	f := newRebuildFixture(t)
	old := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "old", UID: "uid-old"}
	f.publishState(t, schemas.TypePlacementFailed, schemas.PlacementSubject("east", old), &schemas.PlacementFailed{
		DecisionID: "uid-old/3/Delete/east", Workload: old, Cluster: "east", Action: schemas.ActionDelete, Sequence: 3,
		Error: "the cluster did not answer", Attempts: schemas.MaxDeliver})
	f.rebuild(t, f.srv.ClientURL())
	if d := f.lastDecision(t, "east", old); d == nil || d.Action != schemas.ActionDelete || d.Workload.UID != old.UID {
		t.Errorf("last decision on east after the rebuild = %+v, want the Delete of %s sent again", d, old.UID)
	}
}

// TestRebuildDropsWhatItKnowsNothingOf: a decision in the state stream for a workload whose own events are not
// there (a prune cut short) makes the placer delete the copy, as for any workload it does not know, and then
// forget the workload and report it gone, instead of keeping an empty entry for good.
func TestRebuildDropsWhatItKnowsNothingOf(t *testing.T) {
	f := newRebuildFixture(t)
	ghost := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "ghost", UID: "uid-ghost"}
	f.publishState(t, schemas.TypePlacementDecided, schemas.DecisionSubject("east", ghost), &schemas.PlacementDecided{
		DecisionID: "uid-ghost/3/Apply/east", Workload: ghost, Cluster: "east", Action: schemas.ActionApply, Sequence: 3,
		Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "ghost", "namespace": "team"}}})
	p := f.rebuild(t, f.srv.ClientURL())
	if d := f.lastDecision(t, "east", ghost); d == nil || d.Action != schemas.ActionDelete {
		t.Errorf("last decision on east after the rebuild = %+v, want a Delete", d)
	}
	if p.ctrl.Tracks(idOf(ghost)) {
		t.Errorf("the placer still tracks %s: %+v", ghost.Key(), p.ctrl.Copies(idOf(ghost)))
	}
	if gone := p.TakeGone(); !slices.Contains(gone, ghost) {
		t.Errorf("gone = %v, want %v among them", gone, ghost)
	}
}

// publishState publishes an event and waits until the state stream holds it.
func (f *rebuildFixture) publishState(t *testing.T, eventType, subject string, payload schemas.Payload) {
	t.Helper()
	e, err := codec.NewEvent(eventType, "/test", subject, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewPublisher(f.js).Publish(f.ctx, subject, e); err != nil {
		t.Fatal(err)
	}
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := state.GetLastMsgForSubject(f.ctx, subject); err == nil {
			return
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("%s never reached the state stream", subject)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// lastDecision is the decisions stream's last decision for ref on cluster, nil when there is none.
func (f *rebuildFixture) lastDecision(t *testing.T, cluster string, ref schemas.ObjectRef) *schemas.PlacementDecided {
	t.Helper()
	decisions, err := f.js.Stream(f.ctx, schemas.StreamDecisions)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := decisions.GetLastMsgForSubject(f.ctx, schemas.DecisionSubject(cluster, ref))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := codec.DecodePayload(event)
	if err != nil {
		t.Fatal(err)
	}
	return payload.(*schemas.PlacementDecided)
}

// TestRebuiltPlacerSkipsTheEventsTheStateStreamCopied: every event the state stream had copied when a placer
// rebuilt from it is in the rebuilt view, or belongs to an object the pruner removed once it was gone, so a
// replay of the events stream (a durable consumer created again delivers the whole history) must not bring
// such an object back. An events stream created again after the state stream starts its sequences over, so
// its events are not judged by the old copies.
func TestRebuiltPlacerSkipsTheEventsTheStateStreamCopied(t *testing.T) {
	tests := []struct {
		name            string
		recreateEvents  bool
		wantGhostPlaced bool
	}{
		{name: "a replay of the history", wantGhostPlaced: false},
		{name: "an events stream created again after the state stream", recreateEvents: true, wantGhostPlaced: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRebuildFixture(t)
			f.waitForState(t)
			if tt.recreateEvents {
				if err := f.js.DeleteStream(f.ctx, schemas.StreamEvents); err != nil {
					t.Fatal(err)
				}
				if err := bus.ProvisionStreams(f.ctx, f.js, streams.DefaultOptions(), f.log); err != nil {
					t.Fatal(err)
				}
			}
			p := f.rebuild(t, f.srv.ClientURL())
			// A workload's change at a sequence the state stream copied, whose subjects the pruner removed once
			// the workload was gone, as a replay delivers it again.
			ghost := deployment("ghost")
			replayed := delivery(t, published-1, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ghost.Ref()), ghost)
			if err := p.Handle(f.ctx, replayed); err != nil {
				t.Fatal(err)
			}
			if placed := f.lastDecision(t, "east", ghost.Ref()) != nil; placed != tt.wantGhostPlaced {
				t.Errorf("ghost placed = %v, want %v", placed, tt.wantGhostPlaced)
			}
		})
	}
}

// TestRebuildKeepsTheLastValidPolicyAndRI: a policy and an RI whose newest versions are refused keep their
// last valid versions in force across a restart. The state stream holds only the refused newest versions, so
// the rebuild finds the valid ones in the events stream's history.
func TestRebuildKeepsTheLastValidPolicyAndRI(t *testing.T) {
	f := newRebuildFixture(t)
	widgetRI := func(replicasPath string) *schemas.ObjectChanged {
		return object("optimization.nvidia.com/v1alpha1", "ResourceInterface", "", "widget-ri", nil, map[string]any{
			"spec": map[string]any{"structureDefinition": map[string]any{"rootComponent": map[string]any{
				"name": "widget", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
				"specDefinition":  map[string]any{"podTemplateSpecPath": ".spec.template"},
				"scaleDefinition": map[string]any{"replicasPath": replicasPath}}}}})
	}
	ri := widgetRI(".spec.replicas")
	f.publish(t, schemas.TypeResourceInterfaceChanged, schemas.ResourceInterfaceSubject(ri.Ref()), "ri-1", ri)
	f.publish(t, schemas.TypeResourceInterfaceChanged, schemas.ResourceInterfaceSubject(ri.Ref()), "ri-2", widgetRI(".spec.replicas | ]["))
	spread := eventtest.Policy("all", map[string]any{"scoring": "Spread"})
	f.publish(t, schemas.TypePolicyChanged, schemas.PolicySubject(spread.Ref()), "policy-2", spread)
	bogus := eventtest.Policy("all", map[string]any{"scoring": "Bogus"})
	f.publish(t, schemas.TypePolicyChanged, schemas.PolicySubject(bogus.Ref()), "policy-3", bogus)
	f.waitForStateOf(t, published+1, published+4) // the RI's subject is new; the policy's versions replace each other

	p := f.rebuild(t, f.srv.ClientURL())
	if err := p.ctrl.PolicyRefused("all"); err == nil {
		t.Errorf("policy all not refused, want the refused Bogus version noted")
	}
	if got := p.Snapshot().Policies(); len(got) != 1 || got[0].Scoring() != "Spread" {
		t.Errorf("store policies %+v, want the Spread version of all in force", got)
	}
	if ris := p.Snapshot().ResourceInterfacesFor("example.com", "Widget"); len(ris) != 1 || ris[0].Name != "widget-ri" {
		t.Errorf("RIs in force for Widget after the rebuild = %+v, want widget-ri's last valid version", ris)
	}
}

// TestRebuildAppliesAgainACopyGoneMeanwhile: a copy whose last state in the streams is gone, with no Apply to
// its cluster after it (deleted in its cluster while no placer ran, or before the placer handled the Gone),
// is applied again by a restarted placer, on the terms a running placer applies it again: not when the status
// the Gone carries says it had finished.
func TestRebuildAppliesAgainACopyGoneMeanwhile(t *testing.T) {
	failed := map[string]any{"conditions": []any{map[string]any{"type": "Progressing", "status": "False",
		"reason": "ProgressDeadlineExceeded"}}}
	running := map[string]any{"replicas": int64(1), "availableReplicas": int64(1)}
	tests := []struct {
		name      string
		earlier   map[string]any          // a status published before the Gone, nil for none
		earlierOf string                  // the uid of the workload earlier is of, when not web's
		gone      *schemas.WorkloadStatus // nil: no Gone
		applyMore bool                    // another Apply to east after the Gone
		wantAgain bool
	}{
		{name: "gone while running", gone: &schemas.WorkloadStatus{Status: running}, wantAgain: true},
		{name: "gone once it had failed", gone: &schemas.WorkloadStatus{Status: failed}},
		{name: "gone having reported no status", gone: &schemas.WorkloadStatus{}, wantAgain: true},
		// A Gone that carries no status (from a producer that did not carry it) is judged by the last status in
		// the subject's history.
		{name: "gone saying nothing, having failed before", earlier: failed, gone: &schemas.WorkloadStatus{}},
		{name: "gone saying nothing, running before", earlier: running, gone: &schemas.WorkloadStatus{}, wantAgain: true},
		// The subject names the workload, which may have been created again under its name since.
		{name: "gone saying nothing, an earlier workload of its name failed", earlier: failed, earlierOf: "uid-of-an-earlier-web",
			gone: &schemas.WorkloadStatus{}, wantAgain: true},
		{name: "applied again since", gone: &schemas.WorkloadStatus{Status: running}, applyMore: true},
		{name: "never gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRebuildFixture(t)
			f.rebuild(t, f.srv.ClientURL())
			first := f.lastDecision(t, "east", f.web.Ref())
			if first == nil || first.Action != schemas.ActionApply {
				t.Fatalf("the first placer's decision on east = %+v, want an Apply", first)
			}
			f.waitForSubject(t, schemas.DecisionSubject("east", f.web.Ref()))
			statusSubject := schemas.WorkloadStatusSubject("east", f.web.Ref())
			if tt.earlier != nil {
				of := f.web.Ref()
				if tt.earlierOf != "" {
					of.UID = tt.earlierOf
				}
				f.publishState(t, schemas.TypeWorkloadStatus, statusSubject,
					&schemas.WorkloadStatus{Cluster: "east", Workload: of, Status: tt.earlier})
			}
			if tt.gone != nil {
				tt.gone.Cluster, tt.gone.Workload, tt.gone.Gone = "east", f.web.Ref(), true
				f.publish(t, schemas.TypeWorkloadStatus, statusSubject, "gone", tt.gone)
				f.waitForLast(t, statusSubject, "the Gone", func(p schemas.Payload) bool {
					s, ok := p.(*schemas.WorkloadStatus)
					return ok && s.Gone
				})
			}
			if tt.applyMore {
				again := *first
				again.Sequence++
				again.DecisionID = fmt.Sprintf("%s/%d/Apply/east", f.web.Ref().UID, again.Sequence)
				f.publishState(t, schemas.TypePlacementDecided, schemas.DecisionSubject("east", f.web.Ref()), &again)
				f.waitForSequence(t, schemas.DecisionSubject("east", f.web.Ref()), again.Sequence)
				first = &again
			}
			f.rebuild(t, f.srv.ClientURL())
			last := f.lastDecision(t, "east", f.web.Ref())
			if again := last.Sequence > first.Sequence && last.Action == schemas.ActionApply; again != tt.wantAgain {
				t.Errorf("last decision on east: %s #%d after #%d; applied again = %v, want %v",
					last.Action, last.Sequence, first.Sequence, again, tt.wantAgain)
			}
		})
	}
}

// waitForSubject waits until the state stream holds a message on subject.
func (f *rebuildFixture) waitForSubject(t *testing.T, subject string) {
	t.Helper()
	f.waitForSequence(t, subject, 0)
}

// waitForSequence waits until the state stream's last message on a decision subject is decision seq or later.
func (f *rebuildFixture) waitForSequence(t *testing.T, subject string, seq uint64) {
	t.Helper()
	f.waitForLast(t, subject, fmt.Sprintf("sequence %d", seq), func(p schemas.Payload) bool {
		d, ok := p.(*schemas.PlacementDecided)
		return seq == 0 || (ok && d.Sequence >= seq)
	})
}

// waitForLast waits until the state stream's last message on subject carries a payload ok accepts.
func (f *rebuildFixture) waitForLast(t *testing.T, subject, what string, ok func(schemas.Payload) bool) {
	t.Helper()
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if msg, err := state.GetLastMsgForSubject(f.ctx, subject); err == nil {
			if event, err := bus.Decode(msg.Header, msg.Data); err == nil {
				if payload, err := codec.DecodePayload(event); err == nil && ok(payload) {
					return
				}
			}
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("%s never reached the state stream with %s", subject, what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRebuildActsOnWhatChangedWhileNoPlacerRan: a policy or a cluster's labels changed while no placer ran
// move the workloads that no longer belong where they run as soon as a placer rebuilds, as they would have
// moved had a placer been running. Before, the rebuilt placer restored every placement as it was.
func TestRebuildActsOnWhatChangedWhileNoPlacerRan(t *testing.T) {
	cluster := func(name, tier string) *schemas.ObjectChanged {
		c := eventtest.Cluster(name, map[string]any{"tier": tier})
		c.Object["metadata"].(map[string]any)["resourceVersion"] = tier
		return c
	}
	policy := func(tier string) *schemas.ObjectChanged {
		p := eventtest.Policy("all", map[string]any{
			"clusterSelector": map[string]any{"matchLabels": map[string]any{"tier": tier}}})
		p.Object["metadata"].(map[string]any)["resourceVersion"] = tier
		return p
	}
	tests := []struct {
		name   string
		change func(f *rebuildFixture, t *testing.T)
	}{
		{"the policy selects other clusters", func(f *rebuildFixture, t *testing.T) {
			f.publishLast(t, schemas.TypePolicyChanged, schemas.PolicySubject(policy("silver").Ref()), "policy-silver", policy("silver"))
		}},
		{"the clusters were relabelled", func(f *rebuildFixture, t *testing.T) {
			f.publishLast(t, schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), "east-silver", cluster("east", "silver"))
			f.publishLast(t, schemas.TypeClusterChanged, schemas.ClusterSpecSubject("west"), "west-gold", cluster("west", "gold"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRebuildFixture(t)
			f.publishLast(t, schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), "east-gold", cluster("east", "gold"))
			f.publishLast(t, schemas.TypePolicyChanged, schemas.PolicySubject(policy("gold").Ref()), "policy-gold", policy("gold"))
			f.publishLast(t, schemas.TypeClusterChanged, schemas.ClusterSpecSubject("west"), "west-silver", cluster("west", "silver"))
			f.publishLast(t, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("west"), "west-beat",
				&schemas.ClusterHeartbeat{Cluster: "west", Time: time.Now()})
			f.publishLast(t, schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("west"), "west-apis",
				&schemas.ClusterAPIs{Cluster: "west", APIs: []string{"apps/v1/Deployment"}})
			f.publishLast(t, schemas.TypeNodeChanged, schemas.NodeSubject("west", "n1"), "west-n1", &schemas.NodeState{Cluster: "west",
				Name: "n1", Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
					corev1.ResourcePods: resource.MustParse("110")}})
			f.rebuild(t, f.srv.ClientURL())
			if first := f.lastDecision(t, "east", f.web.Ref()); first == nil || first.Action != schemas.ActionApply {
				t.Fatalf("the first placer's decision on east = %+v, want an Apply", first)
			}
			if west := f.lastDecision(t, "west", f.web.Ref()); west != nil {
				t.Fatalf("the first placer decided %s on west, want nothing", west.Action)
			}
			f.waitForSubject(t, schemas.DecisionSubject("east", f.web.Ref()))

			tt.change(f, t)
			f.rebuild(t, f.srv.ClientURL())
			if west := f.lastDecision(t, "west", f.web.Ref()); west == nil || west.Action != schemas.ActionApply {
				t.Errorf("the rebuilt placer's decision on west = %+v, want the Apply that moves web there", west)
			}
		})
	}
}

// publishLast publishes an event with dedupe id and waits until the state stream's last message on subject is it.
func (f *rebuildFixture) publishLast(t *testing.T, eventType, subject, id string, payload schemas.Payload) {
	t.Helper()
	f.publish(t, eventType, subject, id, payload)
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if msg, err := state.GetLastMsgForSubject(f.ctx, subject); err == nil && msg.Header.Get(jetstream.MsgIDHeader) == id {
			return
		}
		select {
		case <-f.ctx.Done():
			t.Fatalf("%s %s never reached the state stream", subject, id)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestRebuildTakesAnEventsOwnTimeOverItsCopys: the state stream's copy of an event is stored when it is copied,
// possibly long after the event (a state stream recreated, or catching up); a rebuilt placer takes the event's
// own time when earlier, so a heartbeat an hour old does not make its cluster Ready at restart.
func TestRebuildTakesAnEventsOwnTimeOverItsCopys(t *testing.T) {
	f := newRebuildFixture(t)
	old := time.Now().Add(-time.Hour)
	subject := schemas.ClusterHeartbeatSubject("east")
	e, err := codec.NewEvent(schemas.TypeClusterHeartbeat, "/test", subject, "old-beat",
		&schemas.ClusterHeartbeat{Cluster: "east", Time: old})
	if err != nil {
		t.Fatal(err)
	}
	e.SetTime(old)
	if _, err := bus.NewPublisher(f.js).Publish(f.ctx, subject, e); err != nil {
		t.Fatal(err)
	}
	f.waitForLast(t, subject, "the hour-old heartbeat", func(p schemas.Payload) bool {
		hb, ok := p.(*schemas.ClusterHeartbeat)
		return ok && hb.Time.Equal(old)
	})
	p := f.rebuild(t, f.srv.ClientURL())
	if clusterReady(p, "east") {
		t.Errorf("east is Ready after a rebuild whose last heartbeat of it is an hour old")
	}
}

// TestRebuildTakesNewerEventsFromHistory: a state stream can hold an object's older version than the events
// stream (a server stopped uncleanly brings back messages its per-subject limit or the pruner had removed). A
// rebuilt placer applies each object's last event in the events stream when it is newer, so a deleted workload
// the state stream still shows is deleted, not placed again. The test stops the state stream's copying of the
// events stream before the deletion, so the state stream keeps the workload.
func TestRebuildTakesNewerEventsFromHistory(t *testing.T) {
	f := newRebuildFixture(t)
	f.rebuild(t, f.srv.ClientURL())
	f.waitForSubject(t, schemas.DecisionSubject("east", f.web.Ref()))
	if first := f.lastDecision(t, "east", f.web.Ref()); first == nil || first.Action != schemas.ActionApply {
		t.Fatalf("the first placer's decision on east = %+v, want an Apply", first)
	}
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	cfg := state.CachedInfo().Config
	cfg.Sources = slices.DeleteFunc(cfg.Sources, func(s *jetstream.StreamSource) bool { return s.Name == schemas.StreamEvents })
	if _, err := f.js.UpdateStream(f.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	f.publish(t, schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(f.web.Ref()), "web-deleted",
		&schemas.ObjectDeleted{Workload: f.web.Ref()})

	p := f.rebuilt(t, f.srv.ClientURL())
	if p.ctrl.Tracks(idOf(f.web.Ref())) {
		t.Errorf("the rebuilt placer tracks the deleted %s", f.web.Ref().Key())
	}
	if d := f.lastDecision(t, "east", f.web.Ref()); d == nil || d.Action != schemas.ActionDelete {
		t.Errorf("last decision on east after the rebuild = %+v, want the Delete of the deleted workload's copy", d)
	}
}

// TestRebuildLogsAtInfoOnlyWhatTheStateStreamLost: every restart past the duplicate window has the producers
// publish each object again while the placer rebuilds, so the events stream holds an event newer than the state
// stream for every workload, policy and namespace. Those came after the state stream's copy the rebuild read
// (past the replay floor) and are no news: one info line each flooded the log of every restart. An event at or
// below the floor is one the state stream lost (an unclean stop), and is still told at info.
func TestRebuildLogsAtInfoOnlyWhatTheStateStreamLost(t *testing.T) {
	tests := []struct {
		name       string
		floor      uint64
		seq        uint64
		wantAtInfo bool
	}{
		{name: "published while the placer rebuilt", floor: 100, seq: 150, wantAtInfo: false},
		{name: "lost by the state stream", floor: 100, seq: 60, wantAtInfo: true},
		{name: "no floor known", floor: 0, seq: 60, wantAtInfo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &logbuf.Buffer{}
			p, err := NewPlacer(nil, karta.NewRegistry(), PlacerConfig{}, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			p.replayFloor = tt.floor
			p.logCaughtUp("fleetflow.events.workload.apps.Deployment.team-a.web", tt.seq)
			if got := logs.Contains("holds a newer event than the state stream"); got != tt.wantAtInfo {
				t.Errorf("logged at info = %v, want %v:\n%s", got, tt.wantAtInfo, logs)
			}
		})
	}
}

// TestRebuildReadsWhatTheStateStreamHasNotCopied: a state stream whose sourcing has stalled (here it refuses
// new messages; in a NATS cluster, a restarted server or an election can hold it up) lacks events the durable
// consumer will not deliver again, as a former placer acknowledged them. The rebuild reads them from the
// events stream itself: the node reported meanwhile is in the view.
func TestRebuildReadsWhatTheStateStreamHasNotCopied(t *testing.T) {
	f := newRebuildFixture(t)
	f.waitForState(t)
	state, err := f.js.Stream(f.ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	cfg := state.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = int64(published), jetstream.DiscardNew
	if _, err := f.js.UpdateStream(f.ctx, cfg); err != nil {
		t.Fatal(err)
	}
	f.publish(t, schemas.TypeNodeChanged, schemas.NodeSubject("east", "n2"), "n2", eventtest.Node("east", "n2", "8"))

	p := f.rebuild(t, f.srv.ClientURL())
	if info, err := state.Info(f.ctx); err != nil || info.State.Msgs != published {
		t.Fatalf("the state stream holds %v messages (%v), want the %d it held before: the test did not stall it", info.State.Msgs, err, published)
	}
	if nodes := p.Snapshot().Nodes("east"); len(nodes) != 2 {
		t.Errorf("the rebuilt view has %d nodes on east, want n1 and n2", len(nodes))
	}
}
