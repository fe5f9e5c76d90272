package bustest

import (
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// JetStream starts an embedded server in a temporary directory with fleetflow's streams, for the length of
// the test, and returns a JetStream context connected to it.
func JetStream(t testing.TB) jetstream.JetStream {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, js, err := bus.Connect(srv.ClientURL(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := bus.ProvisionStreams(t.Context(), js, streams.DefaultOptions(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return js
}
