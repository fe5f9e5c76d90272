package bus

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// ReadEvents hands take, in stream order, every fleetflow event an ordered consumer of stream with cfg finds
// pending when it starts, skipping messages that do not decode, then deletes the consumer.
func ReadEvents(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	take func(eventType string, payload schemas.Payload)) error {
	return ReadStoredEvents(ctx, js, stream, cfg, func(eventType string, payload schemas.Payload, _ time.Time) {
		take(eventType, payload)
	})
}

// ReadStoredEvents is ReadEvents, handing take also when stream stored each message (zero when unknown).
func ReadStoredEvents(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	take func(eventType string, payload schemas.Payload, stored time.Time)) error {
	consumer, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return fmt.Errorf("read %s %v: %w", stream, cfg.FilterSubjects, err)
	}
	defer DeleteOrderedConsumer(js, stream, consumer)
	info, err := consumer.Info(ctx)
	if err != nil {
		return fmt.Errorf("read %s %v: %w", stream, cfg.FilterSubjects, err)
	}
	for pending := info.NumPending; pending > 0; {
		msg, err := consumer.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return fmt.Errorf("read %s %v: %w", stream, cfg.FilterSubjects, err)
		}
		var stored time.Time
		if meta, err := msg.Metadata(); err == nil {
			pending, stored = meta.NumPending, meta.Timestamp
		} else {
			pending--
		}
		event, err := Decode(msg.Headers(), msg.Data())
		if err != nil {
			continue
		}
		if payload, err := schemas.DecodePayload(event); err == nil {
			take(event.Type(), payload, stored)
		}
	}
	return nil
}

// DeleteOrderedConsumer removes an ordered consumer from the server at once. Stopping it is not enough: the
// server keeps it for its inactive threshold (5 minutes), and a stream takes at most 1000 consumers by
// default, so readers run in a loop (audits polled, rebuilds) would lock out every new consumer of the
// stream, the placer's and appliers' included.
func DeleteOrderedConsumer(js jetstream.JetStream, stream string, consumer jetstream.Consumer) {
	info := consumer.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, info.Name) // best effort: the server reaps it after the threshold anyway
}
