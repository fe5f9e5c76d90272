package pipeline_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/fleetflow/fleetflow/consumers"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/internal/pipeline"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestPlacerStartsOverWhenItsConsumerIsDeleted: a placer whose durable consumer is deleted under it does not
// go on receiving nothing: it says so, starts over as a new leader would, creates the consumer again, and
// takes the events published after.
func TestPlacerStartsOverWhenItsConsumerIsDeleted(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	b, err := pipeline.OpenBus(ctx, pipeline.BusOptions{DataDir: t.TempDir(), Streams: schemas.DefaultStreamOptions()},
		t.Name(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	logs := &logbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- pipeline.RunPlacer(ctx, b, consumers.PlacerConfig{}, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	stream, cfg := schemas.PlacerConsumer()
	consumerExists := func() bool {
		_, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
		return err == nil
	}
	eventually(t, "the placer's consumer", consumerExists)
	if err := b.JetStream.DeleteConsumer(ctx, stream, cfg.Durable); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the placer starting over", func() bool { return logs.Contains("starting over") })
	eventually(t, "the placer's consumer created again", consumerExists)

	ns := &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "team-a", "uid": "uid-team-a", "resourceVersion": "1"}}}
	subject := schemas.NamespaceSubject("team-a")
	e, err := schemas.NewEvent(schemas.TypeNamespaceChanged, "/test", subject, "ns-team-a-1", ns)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := b.Publisher.Publish(ctx, subject, e)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the event taken by the new consumer", func() bool {
		c, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.AckFloor.Stream >= ack.Sequence
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("placer ended with %v", err)
	}
}
