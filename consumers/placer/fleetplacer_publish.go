package placer

import (
	"context"
	"errors"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// AsyncEventPublisher publishes without waiting for the stream's acknowledgement; *bus.Publisher
// implements it. With it, the placer sends everything one event causes (verdicts, decisions) at
// once and waits for the acknowledgements together, instead of one round trip per message.
type AsyncEventPublisher interface {
	PublishAsync(subject string, e cloudevents.Event) (jetstream.PubAckFuture, error)
}

const (
	// maxUnacknowledged bounds the placer's publishes awaiting acknowledgement; a batch or a reconcile that
	// sends more (a backlog, a policy change moving many workloads, a rebuild) waits for them in slices of
	// this size. It stays well under the client's own limit of outstanding async publishes (4,000).
	maxUnacknowledged = 1024
	// encodeQueue is how many sends may wait for the batch's encoding goroutine before the placer waits.
	encodeQueue = 256
	// acknowledgementTimeout bounds the wait for one slice, like the timeout of a synchronous publish.
	acknowledgementTimeout = 30 * time.Second
)

// Republisher sends a published message again with the same id; *bus.Publisher implements it. With it, the
// placer makes sure of a publish whose acknowledgement did not come (a stream leader that died with it in
// flight, one being elected) instead of failing the batch: a failed batch is redelivered only after a backoff,
// and the events behind it, handled meanwhile, could decide again what the batch had decided and stored.
type Republisher interface {
	Republish(msg *nats.Msg) (jetstream.PubAckFuture, error)
}

// FencedPublisher stores encoded messages all or nothing per batch, only while its placer holds the lease
// (bus.Fence). With one, the placer sends at Flush (or every maxUnacknowledged effects) what it staged: a placer
// paused past its lease and then continued gets nothing more stored.
type FencedPublisher interface {
	PublishMsgs(ctx context.Context, msgs []*nats.Msg) error
}

// acknowledgementRetry is how long the placer waits for one acknowledgement before it sends the message again.
const acknowledgementRetry = 2 * time.Second

// outgoing is one event to encode and publish.
type outgoing struct {
	eventType, subject, id string
	payload                schemas.Payload
}

// publishBatch encodes and publishes what the placer sends until the next wait for acknowledgements. The
// first few sends are encoded right away: at low load an event causes a verdict and a decision, and a
// goroutine hop would only add latency. Past that, a goroutine of the batch's own takes over, so under a
// backlog the placer goes on with its next workload while the last ones are encoded. Payloads handed to it
// are not modified afterwards: they are built for the event, or read from the store, whose objects are
// immutable.
type publishBatch struct {
	// async publishes each message; nil when a FencedPublisher stores them all at the end.
	async AsyncEventPublisher
	// inline holds what was published before the goroutine started.
	inline publishResult
	sent   int
	queue  chan outgoing
	// done delivers, once queue is closed and drained, every publish's future and the encoding errors.
	done chan publishResult
}

// inlineSends is how many sends of a batch are encoded on the placer's goroutine.
const inlineSends = 4

type publishResult struct {
	futures []jetstream.PubAckFuture
	// msgs are the encoded messages, for a FencedPublisher
	msgs []*nats.Msg
	errs []error
}

func (r *publishResult) publish(async AsyncEventPublisher, o outgoing) {
	event, err := codec.NewEvent(o.eventType, schemas.SourcePlacer, o.subject, o.id, o.payload)
	if err == nil && async == nil {
		var msg *nats.Msg
		if msg, err = bus.EncodeWithID(o.subject, event); err == nil {
			r.msgs = append(r.msgs, msg)
			return
		}
	}
	if err == nil {
		var future jetstream.PubAckFuture
		if future, err = async.PublishAsync(o.subject, event); err == nil {
			r.futures = append(r.futures, future)
			return
		}
	}
	r.errs = append(r.errs, fmt.Errorf("publish %s to %s: %w", o.eventType, o.subject, err))
}

func (b *publishBatch) send(o outgoing) {
	b.sent++
	if b.sent <= inlineSends {
		b.inline.publish(b.async, o)
		return
	}
	if b.queue == nil {
		b.queue, b.done = make(chan outgoing, encodeQueue), make(chan publishResult, 1)
		go func() {
			var res publishResult
			for o := range b.queue {
				res.publish(b.async, o)
			}
			b.done <- res
		}()
	}
	b.queue <- o
}

// finish waits for the goroutine, if one started, and returns everything the batch published.
func (b *publishBatch) finish() publishResult {
	res := b.inline
	if b.queue != nil {
		close(b.queue)
		more := <-b.done
		res.futures = append(res.futures, more.futures...)
		res.msgs = append(res.msgs, more.msgs...)
		res.errs = append(res.errs, more.errs...)
	}
	return res
}

// publishing is what the placer sent since its last Flush: the batch awaiting acknowledgement, how many
// publishes it holds, and err, the failure of an acknowledgement awaited before Flush, which fails the whole
// batch.
type publishing struct {
	batch  *publishBatch
	queued int
	err    error
	// fenced stores the batch at await when the placer's publisher is a FencedPublisher.
	fenced FencedPublisher
}

// send publishes one effect: through the batch's goroutine when the publisher is asynchronous, waiting for
// acknowledgements only when too many are outstanding.
func (o *publishing) send(ctx context.Context, publisher EventPublisher, e lifecycle.Effect) error {
	countSent(e.Payload)
	fenced, isFenced := publisher.(FencedPublisher)
	async, ok := publisher.(AsyncEventPublisher)
	if !ok && !isFenced {
		event, err := codec.NewEvent(e.Type, schemas.SourcePlacer, e.Subject, e.ID, e.Payload)
		if err != nil {
			return fmt.Errorf("placer: %w", err)
		}
		_, err = publisher.Publish(ctx, e.Subject, event)
		return err
	}
	if o.queued >= maxUnacknowledged {
		if err := o.await(ctx); err != nil {
			return err
		}
	}
	if o.batch == nil {
		o.batch = &publishBatch{async: async}
		if isFenced {
			o.batch.async, o.fenced = nil, fenced
		}
	}
	o.batch.send(outgoing{eventType: e.Type, subject: e.Subject, id: e.ID, payload: e.Payload})
	o.queued++
	return nil
}

// await waits until everything sent so far is stored, and reports what was not.
func (o *publishing) await(ctx context.Context) error {
	if o.batch == nil {
		return nil
	}
	republisher, _ := o.batch.async.(Republisher)
	res := o.batch.finish()
	o.batch, o.queued = nil, 0
	if o.fenced != nil {
		if len(res.errs) > 0 {
			return errors.Join(res.errs...)
		}
		if err := o.fenced.PublishMsgs(ctx, res.msgs); err != nil {
			return fmt.Errorf("placer: %w", err)
		}
		return nil
	}
	timeout := time.NewTimer(acknowledgementTimeout)
	defer timeout.Stop()
	errs := res.errs
	for _, f := range res.futures {
		for {
			var retry <-chan time.Time
			if republisher != nil {
				retry = time.After(acknowledgementRetry)
			}
			err, done := error(nil), true
			select {
			case <-f.Ok():
			case err = <-f.Err():
				done = republisher == nil || !unanswered(err)
				if !done {
					<-retry
				}
			case <-retry:
				done = false
			case <-timeout.C:
				return fmt.Errorf("placer: no acknowledgement of %d publishes within %s", len(res.futures), acknowledgementTimeout)
			case <-ctx.Done():
				return ctx.Err()
			}
			if done {
				if err != nil {
					errs = append(errs, fmt.Errorf("publish to %s: %w", f.Msg().Subject, err))
				}
				break
			}
			again, err := republisher.Republish(f.Msg())
			if err != nil {
				errs = append(errs, err)
				break
			}
			f = again
		}
	}
	return errors.Join(errs...)
}

// unanswered tells a publish no stream leader answered (none elected yet, or the connection was lost with it)
// from one the stream refused, which sending again would not change.
func unanswered(err error) bool {
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrConnectionReconnecting)
}

// countSent counts the verdicts and decisions the placer sends, a verdict carried by an Apply among them. A
// batch sent again after its flush failed counts again, though the streams keep each once.
func countSent(payload schemas.Payload) {
	switch sent := payload.(type) {
	case *schemas.PlacementVerdict:
		observe.Verdicts.WithLabelValues(string(sent.Status)).Inc()
	case *schemas.PlacementDecided:
		observe.Decisions.WithLabelValues(string(sent.Action)).Inc()
		if sent.Verdict != nil {
			observe.Verdicts.WithLabelValues(string(sent.Verdict.Status)).Inc()
		}
	}
}
