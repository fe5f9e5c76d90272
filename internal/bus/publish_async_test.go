package bus_test

import (
	"testing"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestPublishAsyncDropsDuplicates: an async publish carries the event id as Nats-Msg-Id just like Publish,
// so the same event published twice, once each way, is stored once.
func TestPublishAsyncDropsDuplicates(t *testing.T) {
	_, js := startJetStream(t)
	ctx := t.Context()
	log, _ := testLogger(t)
	if err := bus.ProvisionStreams(ctx, js, streams.DefaultOptions(), log); err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(js)
	subject, payload := workloadEvent(t, "a", "u1", "1")
	e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, schemas.WorkloadChangedID(payload.Ref(), "1"), payload)
	if err != nil {
		t.Fatal(err)
	}
	future, err := pub.PublishAsync(subject, e)
	if err != nil {
		t.Fatal(err)
	}
	var first uint64
	select {
	case ack := <-future.Ok():
		first = ack.Sequence
		if ack.Duplicate {
			t.Errorf("first publish acknowledged as a duplicate")
		}
	case err := <-future.Err():
		t.Fatal(err)
	}
	second, err := pub.Publish(ctx, subject, e)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Duplicate || second.Sequence != first {
		t.Errorf("second publish = %+v, want a duplicate of sequence %d", second, first)
	}
	msg, err := js.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := msg.GetMsg(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	decoded, err := bus.Decode(stored.Header, stored.Data)
	if err != nil {
		t.Fatal(err)
	}
	if decoded.ID() != e.ID() || string(decoded.Data()) != string(e.Data()) {
		t.Errorf("stored event %s %s, want %s %s", decoded.ID(), decoded.Data(), e.ID(), e.Data())
	}
}
