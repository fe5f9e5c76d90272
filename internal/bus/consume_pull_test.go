package bus_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
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
	if err := bus.ProvisionStreams(ctx, js, streams.DefaultOptions(), log); err != nil {
		t.Fatal(err)
	}

	dropper := bustest.StartPullDropper(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), 1)
	consumerConn, consumerJS, err := bus.Connect(dropper.URL(), "consumer", nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumerConn.Close)
	stream, cfg := streams.PlacerConsumer()
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
	publishWorkloads(t, bus.NewPublisher(js), "web")
	// eventually gives up after 20 s, before the 30 s a lost request cost with the library's defaults.
	eventually(t, "the event handled after the lost pull request", func() bool { return handled.Load() == 1 })
	if !logs.Contains("pull request") {
		t.Errorf("the missed heartbeat was not logged:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop ended with %v", err)
	}
}

// TestConsumeLoopReportsAClosedConsumer: a loop whose consumer is deleted under it returns ErrConsumerClosed,
// batching or not, instead of returning as if it had been asked to stop or pulling from no one for ever: at
// once when a pull request waits at the server, and after its pull heartbeat is missed when none does (the
// consumer deleted before the loop's first pull).
func TestConsumeLoopReportsAClosedConsumer(t *testing.T) {
	for _, tc := range []struct {
		name          string
		batching      bool
		deletedBefore bool
		wantReason    string
	}{
		{name: "one at a time, deleted while pulling", wantReason: "consumer deleted"},
		{name: "batching, deleted while pulling", batching: true, wantReason: "consumer deleted"},
		{name: "one at a time, deleted before the first pull", deletedBefore: true, wantReason: "consumer not found"},
		{name: "batching, deleted before the first pull", batching: true, deletedBefore: true, wantReason: "consumer not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, js := startJetStream(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			log, logs := testLogger(t)
			consumer, stream, cfg := placerConsumer(t, js, log)
			var handled atomic.Int32
			loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, Handle: func(context.Context, bus.Delivery) error {
				handled.Add(1)
				return nil
			}}
			if tc.batching {
				loop.Flush = func(context.Context) error { return nil }
			}
			deleteConsumer := func() {
				if err := js.DeleteConsumer(ctx, stream, cfg.Durable); err != nil {
					t.Fatal(err)
				}
			}
			if tc.deletedBefore {
				deleteConsumer()
			}
			done := make(chan error, 1)
			go func() { done <- loop.Run(ctx) }()
			if !tc.deletedBefore {
				publishWorkloads(t, bus.NewPublisher(js), "web")
				eventually(t, "the event handled", func() bool { return handled.Load() == 1 })
				deleteConsumer()
			}
			select {
			case err := <-done:
				if !errors.Is(err, bus.ErrConsumerClosed) || !strings.Contains(err.Error(), tc.wantReason) {
					t.Errorf("Run returned %v, want ErrConsumerClosed saying %q", err, tc.wantReason)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the loop went on after its consumer was deleted")
			}
			if !logs.Contains("the consumer stopped delivering") {
				t.Errorf("the loop did not log why it stopped:\n%s", logs.String())
			}
		})
	}
}

// TestConsumeLoopHandlesOnlyWhatItWants: with Wants set, a message it does not pick is acknowledged without
// reaching the handler, batching or not, and the ones it picks are handled as usual.
func TestConsumeLoopHandlesOnlyWhatItWants(t *testing.T) {
	for _, batching := range []bool{false, true} {
		t.Run(map[bool]string{false: "one at a time", true: "batching"}[batching], func(t *testing.T) {
			_, js := startJetStream(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			log, _ := testLogger(t)
			consumer, _, _ := placerConsumer(t, js, log)
			handled := &handledNames{}
			loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, Handle: handled.handle,
				Wants: func(h nats.Header) bool { return bus.HasExtension(h, "wanted") }}
			if batching {
				loop.Flush = func(context.Context) error { return nil }
			}
			done := make(chan error, 1)
			go func() { done <- loop.Run(ctx) }()

			pub := bus.NewPublisher(js)
			for _, name := range []string{"skipped-1", "picked", "skipped-2"} {
				subject, payload := workloadEvent(t, name, "uid-"+name, "1")
				e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, "id-"+name, payload)
				if err != nil {
					t.Fatal(err)
				}
				if name == "picked" {
					e.SetExtension("wanted", "yes")
				}
				if _, err := pub.Publish(ctx, subject, e); err != nil {
					t.Fatal(err)
				}
			}
			waitSettled(t, ctx, consumer, 3)
			if got := handled.names(); len(got) != 1 || got[0] != "picked" {
				t.Errorf("handled %v, want only the picked message", got)
			}
			cancel()
			if err := <-done; err != nil {
				t.Errorf("loop ended with %v", err)
			}
		})
	}
}
