package app

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestConsumeCreatesADeletedConsumerAgain: the loop of an applier (or the status writer) whose durable
// consumer is deleted gets a new consumer and goes on handling what is published after.
func TestConsumeCreatesADeletedConsumerAgain(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := OpenTestBus(t)
	logs := &logbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	stream, cfg := streams.ApplierConsumer("east")
	var handled atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- consume(ctx, b, stream, cfg, log, func(c jetstream.Consumer) *bus.ConsumeLoop {
			return &bus.ConsumeLoop{Consumer: c, Log: log, Handle: func(context.Context, bus.Delivery) error {
				handled.Add(1)
				return nil
			}}
		})
	}()
	publish := func(seq uint64) {
		t.Helper()
		ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team-a", Name: "web", UID: "uid-web"}
		d := &schemas.PlacementDecided{DecisionID: "uid-web/" + strconv.FormatUint(seq, 10) + "/Delete/east", Workload: ref,
			Cluster: "east", Action: schemas.ActionDelete, Sequence: seq}
		PublishEvent(t, b, schemas.TypePlacementDecided, schemas.DecisionSubject("east", ref), d.DecisionID, d)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; log:\n%s", what, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	publish(1)
	waitFor("the first decision handled", func() bool { return handled.Load() == 1 })
	if err := b.JetStream.DeleteConsumer(ctx, stream, cfg.Durable); err != nil {
		t.Fatal(err)
	}
	waitFor("the consumer created again", func() bool { return logs.Contains("creating it again") })
	publish(2)
	// The new consumer starts from the stream's beginning, as the applier's configuration says; appliers skip
	// decisions older than what they applied.
	waitFor("the decision published after handled", func() bool { return handled.Load() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("consume ended with %v", err)
	}
}
