package app_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/schemas"
)

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOnePlacerWorksAtATime starts two placers on one JetStream: one takes the lease and works, the other
// stands by; when the first stops, the second takes over and rebuilds its view from the streams.
func TestOnePlacerWorksAtATime(t *testing.T) {
	ctx := t.Context()
	b := app.OpenTestBus(t)
	cfg := placer.PlacerConfig{LeaseTTL: 1500 * time.Millisecond}
	start := func() (*logbuf.Buffer, context.CancelFunc, chan error) {
		logs := &logbuf.Buffer{}
		placerCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- app.RunPlacer(placerCtx, b, cfg, slog.New(slog.NewTextHandler(logs, nil))) }()
		return logs, cancel, done
	}
	const working = "placer view rebuilt"
	first, stopFirst, firstDone := start()
	eventually(t, "the first placer working", func() bool { return first.Contains(working) })
	second, stopSecond, secondDone := start()
	defer func() {
		stopSecond()
		if err := <-secondDone; err != nil {
			t.Errorf("second placer: %v", err)
		}
	}()
	eventually(t, "the second placer standing by", func() bool { return second.Contains("standing by") })
	if second.Contains(working) {
		t.Fatal("the second placer works while the first holds the lease")
	}

	stopFirst()
	if err := <-firstDone; err != nil {
		t.Errorf("first placer: %v", err)
	}
	eventually(t, "the second placer taking over", func() bool { return second.Contains(working) })

	// A lease taken away (as when its key expired during a long pause) stops the placer; it stands by and
	// takes the free lease again.
	kv, err := b.JetStream.KeyValue(ctx, schemas.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, schemas.LeasePlacer); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second placer noticing its lost lease", func() bool { return second.Contains("lost the placer lease") })
	eventually(t, "the second placer holding the lease again", func() bool {
		entry, err := kv.Get(ctx, schemas.LeasePlacer)
		return err == nil && len(entry.Value()) > 0
	})
}
