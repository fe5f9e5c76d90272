package model

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// Follow fills m from the streams of js and keeps it current until ctx is done. It notes where the events and
// decisions streams end, reads the state stream whole (the current picture), marks m synced, then follows both
// streams from where they ended: a message stored while the state stream was read is taken twice, the second
// time in its place, which leaves the picture as the last message says.
func Follow(ctx context.Context, js jetstream.JetStream, m *Model, log *slog.Logger) error {
	sources := []string{schemas.StreamEvents, schemas.StreamDecisions}
	last := map[string]uint64{}
	for _, name := range sources {
		stream, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("ui: stream %s: the server has no such stream: no fleetflow part has used it yet, or it "+
				"is not the server fleetflow uses: %w", name, err)
		}
		if err != nil {
			return fmt.Errorf("ui: stream %s: %w", name, err)
		}
		last[name] = stream.CachedInfo().State.LastSeq
	}
	read := 0
	err := bus.ReadMessages(ctx, js, schemas.StreamState, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy},
		func(msg jetstream.Msg, stored time.Time) {
			if in, ok := decode(msg, stored); ok {
				m.Apply(in)
				read++
			}
		})
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	m.MarkSynced()
	log.Info("fleet view read from the state stream", "messages", read, "stream", schemas.StreamState)
	errs := make(chan error, len(sources))
	for _, name := range sources {
		go func() { errs <- followStream(ctx, js, name, last[name]+1, m) }()
	}
	var first error
	for range sources {
		if err := <-errs; err != nil && first == nil && ctx.Err() == nil {
			first = err
		}
	}
	return first
}

// followStream applies every message of stream from sequence from on, live, until ctx is done.
func followStream(ctx context.Context, js jetstream.JetStream, stream string, from uint64, m *Model) error {
	consumer, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from})
	if err != nil {
		return fmt.Errorf("ui: follow %s: %w", stream, err)
	}
	defer bus.DeleteOrderedConsumer(js, stream, consumer)
	messages, err := consumer.Messages(bus.PullOptions()...)
	if err != nil {
		return fmt.Errorf("ui: follow %s: %w", stream, err)
	}
	stop := context.AfterFunc(ctx, messages.Stop)
	defer stop()
	defer messages.Stop()
	for {
		msg, err := messages.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			return fmt.Errorf("ui: follow %s: %w", stream, err)
		}
		var stored time.Time
		if meta, err := msg.Metadata(); err == nil {
			stored = meta.Timestamp
		}
		if in, ok := decode(msg, stored); ok {
			in.Live = true
			m.Apply(in)
		}
	}
}

// decode reads a message as the model takes it; ok is false for one that is no valid fleetflow event.
func decode(msg jetstream.Msg, stored time.Time) (Input, bool) {
	event, err := bus.Decode(msg.Headers(), msg.Data())
	if err != nil {
		return Input{}, false
	}
	payload, err := codec.DecodePayload(event)
	if err != nil {
		return Input{}, false
	}
	return Input{ID: event.ID(), Type: event.Type(), Subject: msg.Subject(), Payload: payload, Stored: stored}, true
}
