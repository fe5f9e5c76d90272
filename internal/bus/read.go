package bus

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// ReadEvents hands take, in stream order, every fleetflow event an ordered consumer of stream with cfg finds
// pending when it starts, skipping messages that do not decode, then deletes the consumer.
func ReadEvents(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	take func(eventType string, payload schemas.Payload)) error {
	return ReadStoredEvents(ctx, js, stream, cfg, func(eventType string, payload schemas.Payload, _ time.Time) {
		take(eventType, payload)
	})
}

// readWait is how long a read waits for its next message before it asks the server again what is pending.
var readWait = time.Second

// readStallWaits is how many readWaits in a row a read goes on without a message while the server still says
// messages are pending, before it gives up with an error.
const readStallWaits = 10

// ReadStoredEvents is ReadEvents, handing take also when stream stored each message (zero when unknown).
//
// The server's count of pending messages is an estimate, not a promise: after an unclean stop (kill -9) its
// subject state may count messages that are gone, and the state pruner may purge messages a read has already
// counted. So a read ends when a message says none are left, or when no message came within readWait and the
// server, asked again, says none are pending; it does not wait for the count it started from. It fails when
// the server cannot be asked, or keeps saying messages are pending without delivering any.
func ReadStoredEvents(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	take func(eventType string, payload schemas.Payload, stored time.Time)) error {
	return ReadMessages(ctx, js, stream, cfg, func(msg jetstream.Msg, stored time.Time) {
		event, err := Decode(msg.Headers(), msg.Data())
		if err != nil {
			return
		}
		if payload, err := codec.DecodePayload(event); err == nil {
			take(event.Type(), payload, stored)
		}
	})
}

// ReadMessages is ReadStoredEvents for a reader that wants the messages themselves (their subjects and
// sequences), undecoded.
func ReadMessages(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig,
	take func(msg jetstream.Msg, stored time.Time)) error {
	consumer, err := js.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return fmt.Errorf("read %s %v: %w", stream, cfg.FilterSubjects, err)
	}
	defer DeleteOrderedConsumer(js, stream, consumer)
	if err := readPending(ctx, consumer, take); err != nil {
		return fmt.Errorf("read %s %v: %w", stream, cfg.FilterSubjects, err)
	}
	return nil
}

// readPending hands take every message consumer delivers until the server says none are pending.
func readPending(ctx context.Context, consumer jetstream.Consumer, take func(msg jetstream.Msg, stored time.Time)) error {
	info, err := consumer.Info(ctx)
	if err != nil {
		return err
	}
	if info.NumPending == 0 {
		return nil
	}
	// One iterator for the whole read: a Next or Fetch on an ordered consumer creates its server consumer anew
	// each time, one per message.
	messages, err := consumer.Messages(PullOptions()...)
	if err != nil {
		return err
	}
	defer messages.Stop()
	idle := 0
	for {
		waitCtx, cancel := context.WithTimeout(ctx, readWait)
		msg, err := messages.Next(jetstream.NextContext(waitCtx))
		cancel()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
			// The server resets its count once the consumer reached the end of the stream, so asking again
			// tells a count that was wrong from messages still on their way.
			info, err := consumer.Info(ctx)
			if err != nil {
				return fmt.Errorf("no message within %s, and cannot ask what is pending: %w", readWait, err)
			}
			if info.NumPending == 0 {
				return nil
			}
			if idle++; idle >= readStallWaits {
				return fmt.Errorf("the server says %d messages are pending but delivered none within %s",
					info.NumPending, time.Duration(idle)*readWait)
			}
			continue
		default:
			return err
		}
		idle = 0
		meta, err := msg.Metadata()
		if err != nil {
			take(msg, time.Time{})
			continue // with no count to go by, the next wait tells whether more come
		}
		take(msg, meta.Timestamp)
		if meta.NumPending == 0 {
			return nil
		}
	}
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
