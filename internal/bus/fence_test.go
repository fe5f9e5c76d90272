package bus_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// fencedStreams is a JetStream with fleetflow's streams provisioned.
func fencedStreams(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := startJetStream(t)
	if err := bus.ProvisionStreams(t.Context(), js, streams.DefaultOptions(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	return js
}

// verdictMsgs are n verdict messages of workloads named prefix-0..n-1, with their ids.
func verdictMsgs(t *testing.T, prefix string, n int) []*nats.Msg {
	t.Helper()
	msgs := make([]*nats.Msg, n)
	for i := range n {
		ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: fmt.Sprintf("%s-%d", prefix, i),
			UID: fmt.Sprintf("%s-uid-%d", prefix, i)}
		subject := schemas.VerdictSubject(ref)
		e, err := codec.NewEvent(schemas.TypePlacementVerdict, schemas.SourcePlacer, subject, "verdict/"+ref.UID,
			&schemas.PlacementVerdict{Workload: ref, Status: schemas.VerdictPlaced, Clusters: []string{"east"}, Epoch: "e", Sequence: 1})
		if err != nil {
			t.Fatal(err)
		}
		if msgs[i], err = bus.EncodeWithID(subject, e); err != nil {
			t.Fatal(err)
		}
	}
	return msgs
}

func storedOn(t *testing.T, js jetstream.JetStream, filter string) uint64 {
	t.Helper()
	s, err := js.Stream(t.Context(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context(), jetstream.WithSubjectFilter(filter))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// TestFenceStoresOnlyTheNewestLeadersPublishes: once a second placer recorded its leadership, the first one's
// publishes fail with ErrFenced and store nothing, not even part of a batch, while the second one's are stored.
func TestFenceStoresOnlyTheNewestLeadersPublishes(t *testing.T) {
	js := fencedStreams(t)
	ctx := t.Context()
	verdicts := schemas.SubjectEventsPrefix + ".verdict.>"
	first, err := bus.TakeFence(ctx, js, &schemas.PlacerLeader{Placer: "first", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.PublishMsgs(ctx, verdictMsgs(t, "a", 3)); err != nil {
		t.Fatalf("the leader's publish: %v", err)
	}
	second, err := bus.TakeFence(ctx, js, &schemas.PlacerLeader{Placer: "second", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	err = first.PublishMsgs(ctx, verdictMsgs(t, "b", 5))
	if !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("the former leader's publish = %v, want ErrFenced", err)
	}
	if got := storedOn(t, js, verdicts); got != 3 {
		t.Fatalf("%d verdicts stored, want the 3 of the leader at the time", got)
	}
	if err := second.PublishMsgs(ctx, verdictMsgs(t, "b", 5)); err != nil {
		t.Fatalf("the new leader's publish: %v", err)
	}
	if got := storedOn(t, js, verdicts); got != 8 {
		t.Fatalf("%d verdicts stored, want 8", got)
	}
}

// TestFencedPublishesStoreEachMessageOnce: a batch sent again with some messages stored already stores the
// rest once; a batch larger than the server takes in one goes in several.
func TestFencedPublishesStoreEachMessageOnce(t *testing.T) {
	js := fencedStreams(t)
	ctx := t.Context()
	fence, err := bus.TakeFence(ctx, js, &schemas.PlacerLeader{Placer: "leader", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := verdictMsgs(t, "w", 1200)
	if err := fence.PublishMsgs(ctx, msgs[:700]); err != nil {
		t.Fatal(err)
	}
	if err := fence.PublishMsgs(ctx, msgs[600:]); err != nil {
		t.Fatalf("a batch holding 100 messages stored already: %v", err)
	}
	if got := storedOn(t, js, schemas.SubjectEventsPrefix+".verdict.>"); got != 1200 {
		t.Fatalf("%d verdicts stored, want each of the 1200 once", got)
	}
}

// TestTakingTheFenceIsConditional: a placer that read the fence, then paused while another took the lease and
// recorded its leadership, cannot record its own over it; the other's publishes go on being stored.
func TestTakingTheFenceIsConditional(t *testing.T) {
	js := fencedStreams(t)
	ctx := t.Context()
	paused, err := bus.ReadFence(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	other, err := bus.TakeFence(ctx, js, &schemas.PlacerLeader{Placer: "other", Since: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := paused.Take(ctx, &schemas.PlacerLeader{Placer: "paused", Since: time.Now()}); !errors.Is(err, bus.ErrFenced) {
		t.Fatalf("the paused placer's Take = %v, want ErrFenced", err)
	}
	if err := other.PublishMsgs(ctx, verdictMsgs(t, "w", 2)); err != nil {
		t.Fatalf("the leader's publish after the paused one's attempt: %v", err)
	}
}
