package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestConsumeLoopRecoversFromALostPullRequest: with no pull request at the server while the client believes
// one waits, the loop waits only until its pull heartbeat is missed, seconds rather than the client
// library's default of 30 s, and then pulls again and delivers what waits.
func TestConsumeLoopRecoversFromALostPullRequest(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log, logs := testLogger(t)
	nc, js, err := bus.Connect(srv.ClientURL(), "setup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := bus.ProvisionStreams(ctx, js, schemas.DefaultStreamOptions(), log); err != nil {
		t.Fatal(err)
	}

	dropper := bustest.StartPullDropper(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), 1)
	consumerConn, consumerJS, err := bus.Connect(dropper.URL(), "consumer", nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumerConn.Close)
	stream, cfg := schemas.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(ctx, consumerJS, stream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, Handle: func(context.Context, bus.Delivery) error {
		handled.Add(1)
		return nil
	}}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()

	eventually(t, "the first pull request dropped", func() bool { return dropper.Dropped() == 1 })
	subject, payload := workloadEvent(t, "web", "uid-web", "1")
	e, err := schemas.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, schemas.WorkloadChangedID(payload.Ref(), "1"), payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewPublisher(js).Publish(ctx, subject, e); err != nil {
		t.Fatal(err)
	}
	// eventually gives up after 20 s, before the 30 s a lost request cost with the library's defaults.
	eventually(t, "the event handled after the lost pull request", func() bool { return handled.Load() == 1 })
	if !strings.Contains(logs.String(), "pull request") {
		t.Errorf("the missed heartbeat was not logged:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop ended with %v", err)
	}
}
