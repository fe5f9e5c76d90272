package app

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// TestFollowAckFloorTracksTheConsumer: the placer learns its durable consumer's acknowledgement floor as
// events are acknowledged, which is what lets it forget the events below it.
func TestFollowAckFloorTracksTheConsumer(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b := OpenTestBus(t)
	consumer, err := b.JetStream.CreateOrUpdateConsumer(ctx, schemas.StreamEvents, jetstream.ConsumerConfig{
		Durable: "floor-test", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: schemas.SubjectPlacerTick})
	if err != nil {
		t.Fatal(err)
	}
	floor := &atomic.Uint64{}
	go followAckFloor(ctx, consumer, 10*time.Millisecond, floor, slog.New(slog.DiscardHandler))

	var last uint64
	for i := range 3 {
		last = PublishEvent(t, b, schemas.TypePlacerTick, schemas.SubjectPlacerTick, "floor-test/"+strconv.Itoa(i),
			&schemas.PlacerTick{Time: time.Now().UTC()})
	}
	waitForFloor := func(want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for floor.Load() != want {
			if time.Now().After(deadline) {
				t.Fatalf("acknowledgement floor %d, want %d", floor.Load(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	batch, err := consumer.Fetch(3, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		if err := msg.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitForFloor(last)
}
