package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// Delivery is one decoded, validated event handed to a Handler.
type Delivery struct {
	Event   cloudevents.Event
	Payload schemas.Payload
	// Subject is the NATS subject the event was stored on.
	Subject string
	// StreamSequence is the event's position in its stream; it is monotonic, so it orders decisions.
	StreamSequence uint64
	// Attempt counts deliveries of this message, from 1.
	Attempt uint64
}

// Handler processes one delivery. A nil error acknowledges it. An error wrapped with Permanent terminates
// the message at once; any other error is retried with backoff until schemas.MaxDeliver attempts.
type Handler func(ctx context.Context, d Delivery) error

// GiveUpFunc is called once when a message is terminated after its handler failed, with the last error,
// so the failure can be reported instead of silently dropped.
type GiveUpFunc func(ctx context.Context, d Delivery, err error)

type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent marks err as not worth retrying.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// ConsumeLoop delivers the messages of one durable consumer to a handler, one at a time and in order.
type ConsumeLoop struct {
	Consumer jetstream.Consumer
	Handle   Handler
	GiveUp   GiveUpFunc
	Log      *slog.Logger
}

// Run processes messages until ctx is done. Malformed messages never stop it.
func (l *ConsumeLoop) Run(ctx context.Context) error {
	iter, err := l.Consumer.Messages()
	if err != nil {
		return fmt.Errorf("start consuming: %w", err)
	}
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		iter.Stop()
	}()
	for {
		msg, err := iter.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			l.Log.Warn("consumer fetch failed; continuing", "error", err)
			continue
		}
		l.process(ctx, msg)
	}
}

func (l *ConsumeLoop) process(ctx context.Context, msg jetstream.Msg) {
	log := l.Log.With("subject", msg.Subject())
	meta, err := msg.Metadata()
	if err != nil {
		l.terminate(log, msg, fmt.Sprintf("no jetstream metadata: %v", err))
		return
	}
	log = log.With("stream_seq", meta.Sequence.Stream)
	event, err := Decode(msg.Headers(), msg.Data())
	if err != nil {
		l.terminate(log, msg, err.Error())
		return
	}
	log = log.With("event_id", event.ID(), "event_type", event.Type())
	payload, err := schemas.DecodePayload(event)
	if err != nil {
		l.terminate(log, msg, err.Error())
		return
	}
	d := Delivery{
		Event: event, Payload: payload, Subject: msg.Subject(),
		StreamSequence: meta.Sequence.Stream, Attempt: meta.NumDelivered,
	}
	err = l.handleSafely(ctx, d)
	switch {
	case err == nil:
		if ackErr := msg.Ack(); ackErr != nil {
			log.Warn("ack failed; the message will be redelivered", "error", ackErr)
		}
	case ctx.Err() != nil:
		// Shutting down: leave the message for redelivery to the next consumer.
		_ = msg.Nak()
	case IsPermanent(err) || d.Attempt >= uint64(schemas.MaxDeliver):
		if l.GiveUp != nil {
			l.GiveUp(ctx, d, err)
		}
		l.terminate(log, msg, fmt.Sprintf("giving up after attempt %d: %v", d.Attempt, err))
	default:
		delay := schemas.RetryDelay(d.Attempt)
		log.Warn("handler failed; will retry", "attempt", d.Attempt, "retry_in", delay, "error", err)
		if nakErr := msg.NakWithDelay(delay); nakErr != nil {
			log.Warn("nak failed; the message will be redelivered after the ack wait", "error", nakErr)
		}
	}
}

func (l *ConsumeLoop) handleSafely(ctx context.Context, d Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			l.Log.Error("handler panicked", "event_id", d.Event.ID(), "panic", r, "stack", string(debug.Stack()))
			err = Permanent(fmt.Errorf("handler panicked: %v", r))
		}
	}()
	return l.Handle(ctx, d)
}

func (l *ConsumeLoop) terminate(log *slog.Logger, msg jetstream.Msg, reason string) {
	log.Warn("terminating message", "reason", reason)
	if err := msg.TermWithReason(reason); err != nil {
		log.Warn("term failed", "error", err)
	}
}
