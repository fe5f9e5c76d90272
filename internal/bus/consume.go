package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
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
	// Stored is when the stream stored the message, by the server's clock; zero when unknown.
	Stored time.Time
}

// Handler processes one delivery. A nil error acknowledges it. An error wrapped with Permanent sends the
// message to the dead-letter stream at once; any other error is retried with backoff until schemas.MaxDeliver
// attempts, and then does the same.
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

// FlushFunc makes durable everything the handler started for the messages handled since the last flush
// (for the placer: waits for the acknowledgements of what it published). On error the handler must have put
// its bookkeeping back as it was before those messages, because all of them are delivered again.
type FlushFunc func(ctx context.Context) error

// Pull requests of fleetflow's message iterators expire after pullExpiry, and while one waits the server
// sends a heartbeat every pullHeartbeat. The iterator of nats.go v1.55.0 can stop pulling: when its count
// of requested messages falls under the refill threshold while its previous request is still being sent,
// it skips the refill, and if the messages already requested then run out before anything calls it again,
// it waits with no request at the server. Only two missed heartbeats wake it. On a busy machine the bench
// saw this in about one fleet load of 20 (the placer's consumer with 64,000 messages pending, none
// unacknowledged and no request waiting), and the library's defaults (30 s and 15 s) stalled the placer
// for 30 s. These settings bound it to about 2 s, for a request and a few heartbeats per consumer every
// 5 s when idle.
const (
	pullExpiry    = 5 * time.Second
	pullHeartbeat = time.Second
)

// PullOptions are the pull settings of every message iterator fleetflow runs, durable or ordered: requests
// that expire after pullExpiry, with a heartbeat every pullHeartbeat.
func PullOptions() []jetstream.PullMessagesOpt {
	return []jetstream.PullMessagesOpt{jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat)}
}

// defaultMaxBatch bounds how many messages a batching loop handles before it flushes, so one flush never
// waits behind an unbounded backlog and acknowledgements keep flowing.
const defaultMaxBatch = 256

// ErrConsumerClosed is returned by ConsumeLoop.Run when the consumer's message iterator closed while the loop
// was meant to go on: the consumer was deleted (by an operator, or with its stream), or the connection
// closed for good. Nothing is delivered any more, so the caller must not carry on as if it were.
var ErrConsumerClosed = errors.New("the consumer stopped delivering")

// ConsumeLoop delivers the messages of one durable consumer to a handler, one at a time and in order.
//
// With Flush set, the loop batches: Handle may return before its effects are durable, the loop goes on with
// the next message that is already waiting, and it calls Flush once no message is waiting (or MaxBatch were
// handled). Only then does it acknowledge the batch, so a crash or a failed flush redelivers the whole batch
// and nothing is lost, while a backlog costs one flush per batch instead of one round trip per message.
type ConsumeLoop struct {
	Consumer jetstream.Consumer
	Handle   Handler
	Flush    FlushFunc
	// MaxBatch bounds a batch when Flush is set (default 256).
	MaxBatch int
	// Wants, when set, picks the messages to handle by their headers; any other is acknowledged as it arrives,
	// without being decoded, for a handler that wants few of a stream's messages and whose filter subjects
	// cannot tell them apart.
	Wants  func(nats.Header) bool
	GiveUp GiveUpFunc
	// Refuse, when set, is asked about each message, in order, before it is decoded: a non-empty reason
	// refuses it. A refused message is not handled and holds nothing back: it is acknowledged at once, or,
	// when dead is true, stored as a dead letter (schemas.DeadRefused, with reason) and terminated; the
	// caller records a flood's refusals a few at a time, so that they do not flood the dead letters in turn.
	Refuse func(subject string, stored time.Time) (reason string, dead bool)
	// DeadLetters stores every message the loop gives up on (undecodable, invalid, a permanent error, its
	// attempts used up, a panic) in the dead-letter stream before terminating it; the parts pass their
	// JetStream context. Nil only where nothing should keep them (tests, benches): they are then only logged.
	DeadLetters DeadLetterPublisher
	Log         *slog.Logger

	// StallAfter is how long one handling or flush may run before the process's liveness check fails
	// (default 5 min): a handler that never returns (a call that hangs with no deadline) stops the consumer for
	// good, and only a restart frees it.
	StallAfter time.Duration

	// name labels the loop's metrics: the consumer's durable name.
	name string
	// busySince is when the handling or flush in progress started (Unix nanoseconds), 0 when none is.
	busySince atomic.Int64
	// closed says why the iterator closed while the loop was running; set by the goroutine that reads it.
	closed error
}

// handledMsg is a message whose handler succeeded and that waits for the batch's flush to be acknowledged.
type handledMsg struct {
	msg jetstream.Msg
	d   Delivery
}

// Run processes messages until ctx is done, and returns nil then. Malformed messages never stop it; a
// consumer that stops delivering does, with ErrConsumerClosed.
func (l *ConsumeLoop) Run(ctx context.Context) error {
	if info := l.Consumer.CachedInfo(); info != nil {
		l.name = info.Name
	}
	iter, err := l.Consumer.Messages(PullOptions()...)
	if err != nil {
		return fmt.Errorf("start consuming: %w", err)
	}
	defer observe.WatchConsumer(l.name, l.Consumer)()
	defer observe.AddLiveness("consumer "+l.name, l.stalled)()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
		case <-stopped:
		}
		iter.Stop()
	}()
	if l.Flush == nil {
		for {
			msg, ok := l.next(ctx, iter)
			if !ok {
				return l.closed
			}
			if l.unwanted(msg) || l.refused(ctx, msg) {
				continue
			}
			l.process(ctx, l.decode(msg), nil)
		}
	}
	// The iterator blocks, so a reader goroutine feeds a channel; its length says whether a message is
	// already waiting, which is when the loop keeps batching instead of flushing. The reader also decodes,
	// so decoding the next event overlaps with handling this one.
	maxBatch := l.MaxBatch
	if maxBatch <= 0 {
		maxBatch = defaultMaxBatch
	}
	msgs := make(chan decodedMsg, maxBatch)
	go func() {
		defer close(msgs)
		for {
			msg, ok := l.next(ctx, iter)
			if !ok {
				return
			}
			if l.unwanted(msg) || l.refused(ctx, msg) {
				continue
			}
			select {
			case msgs <- l.decode(msg):
			case <-ctx.Done():
				return
			}
		}
	}()
	var batch []handledMsg
	for m := range msgs {
		if ctx.Err() != nil {
			// Stopping (a placer that lost its lease must not act on more events): what the reader had
			// already fetched goes back for redelivery.
			_ = m.msg.Nak()
			continue
		}
		batch = l.process(ctx, m, batch)
		if len(msgs) == 0 || len(batch) >= maxBatch {
			batch = l.flush(ctx, batch)
		}
	}
	// Stopped: whatever was handled but not flushed is redelivered to the next consumer.
	for _, h := range batch {
		_ = h.msg.Nak()
	}
	// The reader set closed before it closed msgs, and the loop above drained msgs.
	return l.closed
}

// unwanted acknowledges msg, unread, when Wants does not pick it.
func (l *ConsumeLoop) unwanted(msg jetstream.Msg) bool {
	if l.Wants == nil || l.Wants(msg.Headers()) {
		return false
	}
	if err := msg.Ack(); err != nil {
		l.Log.Warn("could not acknowledge a message the handler does not want; it comes again", "subject", msg.Subject(), "error", err)
	}
	return true
}

// refused settles msg unread when Refuse refuses it.
func (l *ConsumeLoop) refused(ctx context.Context, msg jetstream.Msg) bool {
	if l.Refuse == nil {
		return false
	}
	meta, err := msg.Metadata()
	if err != nil {
		return false // decode names the problem
	}
	reason, dead := l.Refuse(msg.Subject(), meta.Timestamp)
	if reason == "" {
		return false
	}
	observe.EventsHandled.WithLabelValues(l.name, EventType(msg.Headers()), "refused").Inc()
	if dead {
		l.terminate(ctx, l.Log.With("subject", msg.Subject(), "stream_seq", meta.Sequence.Stream), msg, schemas.DeadRefused, reason)
		return true
	}
	if err := msg.Ack(); err != nil {
		l.Log.Warn("could not acknowledge a refused message; it comes again", "subject", msg.Subject(), "error", err)
	}
	return true
}

// EventType is the CloudEvents type a message's headers carry, read without decoding the message.
func EventType(header nats.Header) string {
	return header.Get(headerType)
}

// HasExtension reports whether a message's headers carry the CloudEvents extension attribute name.
func HasExtension(header nats.Header, name string) bool {
	return header.Get(headerPrefix+name) != ""
}

// decodedMsg is a message with its decoded delivery, or the reason it cannot be handled (log and dead are then
// set: dead is schemas.DeadUndecodable or schemas.DeadInvalid).
type decodedMsg struct {
	msg     jetstream.Msg
	d       Delivery
	invalid string
	dead    string
	log     *slog.Logger
}

func (l *ConsumeLoop) decode(msg jetstream.Msg) decodedMsg {
	meta, err := msg.Metadata()
	if err != nil {
		return decodedMsg{msg: msg, invalid: fmt.Sprintf("no jetstream metadata: %v", err), dead: schemas.DeadUndecodable,
			log: l.Log.With("subject", msg.Subject())}
	}
	event, err := Decode(msg.Headers(), msg.Data())
	if err != nil {
		return decodedMsg{msg: msg, invalid: err.Error(), dead: schemas.DeadUndecodable,
			log: l.Log.With("subject", msg.Subject(), "stream_seq", meta.Sequence.Stream)}
	}
	payload, err := codec.DecodePayload(event)
	if err != nil {
		dead := schemas.DeadUndecodable
		if errors.Is(err, schemas.ErrInvalidPayload) {
			dead = schemas.DeadInvalid
		}
		return decodedMsg{msg: msg, invalid: err.Error(), dead: dead, log: l.messageLog(msg, meta.Sequence.Stream, &event)}
	}
	return decodedMsg{msg: msg, d: Delivery{
		Event: event, Payload: payload, Subject: msg.Subject(),
		StreamSequence: meta.Sequence.Stream, Attempt: meta.NumDelivered, Stored: meta.Timestamp,
	}}
}

// next returns the next message, or false once the loop should stop: ctx is done, or the iterator closed,
// which sets closed.
func (l *ConsumeLoop) next(ctx context.Context, iter jetstream.MessagesContext) (jetstream.Msg, bool) {
	var last error
	for {
		msg, err := iter.Next()
		if err == nil {
			return msg, true
		}
		if ctx.Err() != nil {
			return nil, false
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			if last == nil {
				last = err
			}
			l.closed = fmt.Errorf("%w: %w", ErrConsumerClosed, last)
			l.Log.Error("the consumer stopped delivering", "error", last)
			return nil, false
		}
		last = err
		if errors.Is(err, jetstream.ErrNoHeartbeat) {
			// The server tells a waiting pull request that its consumer was deleted, but a consumer deleted
			// while no request waited (before the first pull, or between two) only goes silent: its pulls
			// reach no one. Asking for the consumer tells that apart from a lost request.
			if gone := l.consumerGone(ctx); gone != nil {
				l.closed = fmt.Errorf("%w: %w", ErrConsumerClosed, gone)
				l.Log.Error("the consumer stopped delivering", "error", gone)
				return nil, false
			}
			// No request waited at the server (see pullExpiry), or the connection lost the heartbeats. The
			// iterator pulls again at once; the warning shows how often that happens.
			l.Log.Warn("missed the heartbeats of the consumer's pull request; pulling again", "missed_for", 2*pullHeartbeat)
			continue
		}
		l.Log.Warn("consumer fetch failed", "error", err)
	}
}

// consumerGone returns why the consumer no longer exists, or nil when it does or that cannot be told now.
func (l *ConsumeLoop) consumerGone(ctx context.Context) error {
	_, err := l.Consumer.Info(ctx)
	if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return err
	}
	return nil
}

// process handles one message. Without Flush it settles the message at once; with Flush a handled message
// joins batch (returned) and a failed one first flushes the batch before it, so the batch is acknowledged
// or retried as a whole and the failed message on its own.
func (l *ConsumeLoop) process(ctx context.Context, m decodedMsg, batch []handledMsg) []handledMsg {
	if m.invalid != "" {
		observe.EventsHandled.WithLabelValues(l.name, "", "invalid").Inc()
		l.terminate(ctx, m.log, m.msg, m.dead, m.invalid)
		return batch
	}
	msg, d := m.msg, m.d
	started := time.Now()
	l.busySince.Store(started.UnixNano())
	err := l.handleSafely(ctx, d)
	l.busySince.Store(0)
	observe.EventHandleSeconds.WithLabelValues(l.name).Observe(time.Since(started).Seconds())
	if err == nil {
		observe.EventsHandled.WithLabelValues(l.name, d.Event.Type(), "ok").Inc()
		if l.Flush != nil {
			return append(batch, handledMsg{msg: msg, d: d})
		}
		if ackErr := msg.Ack(); ackErr != nil {
			l.messageLog(msg, d.StreamSequence, &d.Event).Warn("ack failed; the message will be redelivered", "error", ackErr)
		}
		return batch
	}
	if l.Flush != nil {
		batch = l.flush(ctx, batch)
	}
	l.settleFailed(ctx, msg, d, err)
	return batch
}

// messageLog is the loop's logger with what identifies one message; it is built only when there is
// something to log, since most messages log nothing here.
func (l *ConsumeLoop) messageLog(msg jetstream.Msg, seq uint64, event *cloudevents.Event) *slog.Logger {
	return l.Log.With("subject", msg.Subject(), "stream_seq", seq, "event_id", event.ID(), "event_type", event.Type())
}

// flush makes the batch durable through Flush and acknowledges it, or hands every message of it back for
// a retry when the flush failed. It returns the emptied batch.
func (l *ConsumeLoop) flush(ctx context.Context, batch []handledMsg) []handledMsg {
	if len(batch) == 0 {
		return batch
	}
	l.busySince.Store(time.Now().UnixNano())
	err := l.Flush(ctx)
	l.busySince.Store(0)
	if err != nil {
		for _, h := range batch {
			l.settleFailed(ctx, h.msg, h.d, fmt.Errorf("flush after handling: %w", err))
		}
		return batch[:0]
	}
	for _, h := range batch {
		if ackErr := h.msg.Ack(); ackErr != nil {
			l.messageLog(h.msg, h.d.StreamSequence, &h.d.Event).Warn("ack failed; the message will be redelivered", "error", ackErr)
		}
	}
	return batch[:0]
}

// settleFailed naks a message whose handling failed so it is retried with backoff, or terminates it (after
// GiveUp) when the error is permanent or its attempts are used up.
func (l *ConsumeLoop) settleFailed(ctx context.Context, msg jetstream.Msg, d Delivery, err error) {
	log := l.messageLog(msg, d.StreamSequence, &d.Event)
	switch {
	case ctx.Err() != nil:
		// Shutting down: leave the message for redelivery to the next consumer.
		_ = msg.Nak()
	case IsPermanent(err) || d.Attempt >= uint64(schemas.MaxDeliver):
		observe.EventsHandled.WithLabelValues(l.name, d.Event.Type(), "gave_up").Inc()
		if l.GiveUp != nil {
			l.GiveUp(ctx, d, err)
		}
		l.terminate(ctx, log, msg, deadReason(err), fmt.Sprintf("giving up after attempt %d: %v", d.Attempt, err))
	default:
		observe.EventsHandled.WithLabelValues(l.name, d.Event.Type(), "retried").Inc()
		delay := retryDelay(d.Attempt)
		log.Warn("handler failed; will retry", "attempt", d.Attempt, "retry_in", delay, "error", err)
		if nakErr := msg.NakWithDelay(delay); nakErr != nil {
			log.Warn("nak failed; the message will be redelivered after the ack wait", "error", nakErr)
		}
	}
}

// retryDelay is schemas.RetryDelay, a variable so that tests can use up a message's attempts in milliseconds
// rather than a minute.
var retryDelay = schemas.RetryDelay

// stalled is the loop's liveness check: it fails while one handling or flush has run longer than StallAfter.
func (l *ConsumeLoop) stalled() error {
	since := l.busySince.Load()
	if since == 0 {
		return nil
	}
	limit := l.StallAfter
	if limit <= 0 {
		limit = defaultStallAfter
	}
	if busy := time.Since(time.Unix(0, since)); busy > limit {
		return fmt.Errorf("one event's handling (or the flush of a batch) has run for %s, longer than %s: the consumer "+
			"is stuck", busy.Round(time.Second), limit)
	}
	return nil
}

// defaultStallAfter is ConsumeLoop.StallAfter's default: far beyond any handling that makes progress (the
// placer's cycle takes milliseconds, an applier's call to an apiserver seconds).
const defaultStallAfter = 5 * time.Minute

func (l *ConsumeLoop) handleSafely(ctx context.Context, d Delivery) (err error) {
	defer func() {
		if r := recover(); r != nil {
			l.Log.Error("handler panicked", "event_id", d.Event.ID(), "panic", r, "stack", string(debug.Stack()))
			err = Permanent(fmt.Errorf("%w: %v", errPanicked, r))
		}
	}()
	return l.Handle(ctx, d)
}

// terminate stores msg as a dead letter (dead is its schemas.DeadReasons value), then tells the server never
// to deliver it again, whether or not the dead letter was stored: one poison message must not hold up the rest.
func (l *ConsumeLoop) terminate(ctx context.Context, log *slog.Logger, msg jetstream.Msg, dead, reason string) {
	log.Warn("terminating message", "reason", reason, "dead_reason", dead)
	storeDeadLetter(ctx, l.DeadLetters, log, msg, l.name, dead, reason)
	if err := msg.TermWithReason(reason); err != nil {
		log.Warn("term failed", "error", err)
	}
}
