package consumers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
)

// AsyncEventPublisher publishes without waiting for the stream's acknowledgement; *bus.Publisher
// implements it. With it, the placer sends everything one event causes (analysis, verdict, decisions) at
// once and waits for the acknowledgements together, instead of one round trip per message.
type AsyncEventPublisher interface {
	PublishAsync(subject string, e cloudevents.Event) (jetstream.PubAckFuture, error)
}

const (
	// maxUnacknowledged bounds the placer's publishes awaiting acknowledgement; a reconcile that sends more
	// (a policy change moving many workloads, a rebuild) waits for them in slices of this size.
	maxUnacknowledged = 256
	// acknowledgementTimeout bounds the wait for one slice, like the timeout of a synchronous publish.
	acknowledgementTimeout = 30 * time.Second
)

// publishBatch holds the publishes of one reconcile that are not acknowledged yet.
type publishBatch struct {
	pending []jetstream.PubAckFuture
}

// publish sends one event: asynchronously when the publisher can, then waiting only when too many wait.
func (p *Placer) publish(ctx context.Context, subject string, event cloudevents.Event) error {
	async, ok := p.publisher.(AsyncEventPublisher)
	if !ok {
		_, err := p.publisher.Publish(ctx, subject, event)
		return err
	}
	if p.batch == nil {
		p.batch = &publishBatch{}
	}
	if len(p.batch.pending) >= maxUnacknowledged {
		if err := p.awaitAcknowledgements(ctx); err != nil {
			// The failed publish may belong to an earlier staged event: the batch fails as a whole.
			p.batchErr = err
			return err
		}
	}
	future, err := async.PublishAsync(subject, event)
	if err != nil {
		return err
	}
	p.batch.pending = append(p.batch.pending, future)
	return nil
}

// awaitAcknowledgements waits until every pending publish is stored, and reports the first that was not.
func (p *Placer) awaitAcknowledgements(ctx context.Context) error {
	if p.batch == nil {
		return nil
	}
	pending := p.batch.pending
	p.batch.pending = nil
	timeout := time.NewTimer(acknowledgementTimeout)
	defer timeout.Stop()
	var errs []error
	for _, f := range pending {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = append(errs, fmt.Errorf("publish to %s: %w", f.Msg().Subject, err))
		case <-timeout.C:
			return fmt.Errorf("placer: no acknowledgement of %d publishes within %s", len(pending), acknowledgementTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// reconcileAndAwait runs reconcile and returns once everything it published is stored. The placer's
// bookkeeping of what it published is updated as it sends, before the acknowledgements arrive; when one
// fails, the bookkeeping of the workloads involved is put back as it was, so the retried event publishes
// them again (identical ids, so whatever was stored already is dropped as a duplicate).
func (p *Placer) reconcileAndAwait(ctx context.Context, touched *touchedSet) error {
	saved := p.saveBookkeeping(touched)
	err := p.reconcile(ctx, touched)
	if waitErr := p.awaitAcknowledgements(ctx); err == nil {
		err = waitErr
	}
	p.batchErr = nil
	if err != nil {
		p.restoreBookkeeping(saved)
		return err
	}
	return nil
}

// savedEntry is what reconcile may change of one workload: its last verdict, its published decisions,
// and whether it is still tracked.
type savedEntry struct {
	entry       *workloadEntry
	lastVerdict string
	published   map[string]publishedDecision
	uidKnown    bool
}

func (p *Placer) saveBookkeeping(touched *touchedSet) []savedEntry {
	var saved []savedEntry
	seen := map[string]bool{}
	save := func(id string) {
		e := p.workloads[id]
		if e == nil || seen[id] {
			return
		}
		seen[id] = true
		_, uidKnown := p.byUID[e.ref.UID]
		saved = append(saved, savedEntry{entry: e, lastVerdict: e.lastVerdict, published: maps.Clone(e.published), uidKnown: uidKnown})
	}
	for id := range touched.ids {
		save(id)
	}
	for id := range touched.verdicts {
		save(id)
	}
	for id := range touched.invalid {
		save(id)
	}
	return saved
}

func (p *Placer) restoreBookkeeping(saved []savedEntry) {
	for _, s := range saved {
		e := s.entry
		e.lastVerdict = s.lastVerdict
		e.published = s.published
		p.workloads[e.id] = e
		if s.uidKnown {
			p.byUID[e.ref.UID] = e.id
		}
	}
}
