package app

import (
	"log/slog"
	"testing"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// OpenTestBus opens a bus with fleetflow's streams on an embedded server in a temporary directory, closed when
// the test ends. It lives in a test file, exported for the package's tests inside and outside the package.
func OpenTestBus(t *testing.T) *Bus {
	t.Helper()
	b, err := OpenBus(t.Context(), BusOptions{DataDir: t.TempDir(), Streams: streams.DefaultOptions()}, t.Name(),
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// PublishEvent publishes an event with id on b and returns its stream sequence, failing the test when it cannot.
func PublishEvent(t *testing.T, b *Bus, eventType, subject, id string, payload schemas.Payload) uint64 {
	t.Helper()
	e, err := codec.NewEvent(eventType, "/test", subject, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := b.Publisher.Publish(t.Context(), subject, e)
	if err != nil {
		t.Fatal(err)
	}
	return ack.Sequence
}
