package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// DefaultLeaseTTL is how long a placer lease outlives its last renewal: after a crash, a standby placer
// takes over within about this long.
const DefaultLeaseTTL = 15 * time.Second

var errLeaseLost = errors.New("lease lost")

// lease is a held key in the leases bucket. The bucket's TTL expires a key whose holder stopped renewing.
type lease struct {
	kv       jetstream.KeyValue
	key      string
	holder   string
	revision uint64
	log      *slog.Logger
	// validUntil (Unix nanoseconds) is when the key expires at the latest: the TTL counted from the moment
	// the last successful take or renewal was sent, which is no later than the server started counting.
	validUntil atomic.Int64
}

// held reports whether the lease is certainly still ours. A holder that stalled (a long pause, a clock
// jump) past validUntil may already have been replaced, even before its renewal loop notices.
func (l *lease) held() bool { return time.Now().UnixNano() < l.validUntil.Load() }

// fenced guards a handler with the lease: past the lease's deadline it calls lost and hands the event back
// instead of acting on it, so a placer that stalled does not decide on a view another placer may have
// moved past.
func fenced(held func() bool, lost func(error), handle bus.Handler) bus.Handler {
	return func(ctx context.Context, d bus.Delivery) error {
		if !held() {
			err := fmt.Errorf("%w: its deadline passed without a renewal", errLeaseLost)
			lost(err)
			return err
		}
		return handle(ctx, d)
	}
}

// leaseClock is the clock a holder name is made with.
var leaseClock = time.Now

// leaseHolders counts the holder names this process made. An instance takes back at once a key carrying its own
// name (takeLease), so two instances of one process (tests, a bench) must never share one, even when the clock
// reads the same for both (a coarse clock): the second would take the first's lease from under it.
var leaseHolders atomic.Uint64

// leaseHolder names an instance taking leases, uniquely: host, process, start time and its number in the process.
func leaseHolder() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + strconv.FormatInt(leaseClock().UnixNano(), 36) + "/" +
		strconv.FormatUint(leaseHolders.Add(1), 10)
}

// acquireLease blocks until it holds key, or ctx is done. The server not answering (restarting, or out of
// reach for a while) is waited out: a placer standing by must not end then, or every standby goes with a
// server restart and none is left to take over.
func acquireLease(ctx context.Context, b *Bus, key, holder string, ttl time.Duration, log *slog.Logger) (*lease, error) {
	var kv jetstream.KeyValue
	err := untilAnswered(ctx, ttl/5, log, "lease bucket "+schemas.LeaseBucket, func() error {
		var err error
		kv, err = b.JetStream.CreateOrUpdateKeyValue(ctx, streams.LeaseBucket(b.Streams, ttl))
		return err
	})
	if err != nil {
		return nil, err
	}
	return takeLease(ctx, kv, key, holder, ttl, log)
}

// untilAnswered calls try until it succeeds or ctx is done, every interval, warning once that it waits.
func untilAnswered(ctx context.Context, interval time.Duration, log *slog.Logger, what string, try func() error) error {
	warned := false
	for {
		err := try()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !warned {
			log.Warn("the server did not answer; trying again", "what", what, "error", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

// takeLease blocks until it holds key in kv, or ctx is done; kv's errors other than the key being held are
// taken for the server not answering, and waited out.
func takeLease(ctx context.Context, kv jetstream.KeyValue, key, holder string, ttl time.Duration, log *slog.Logger) (*lease, error) {
	l := &lease{kv: kv, key: key, holder: holder, log: log}
	waiting, unanswered := false, false
	for {
		sent := time.Now()
		revision, err := kv.Create(ctx, key, []byte(l.holder))
		if err == nil {
			l.revision = revision
			l.validUntil.Store(sent.Add(ttl).UnixNano())
			log.Info("holding the lease", "lease", key, "holder", l.holder)
			return l, nil
		}
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case !errors.Is(err, jetstream.ErrKeyExists):
			if !unanswered {
				log.Warn("cannot take the lease now; trying again", "lease", key, "error", err)
				unanswered = true
			}
		default:
			// Read at every attempt, not only the first: an instance standing by whose Create, once the other's
			// key expired, was stored though its answer was lost finds its own name there too.
			current, _ := kv.Get(ctx, key)
			holder := ""
			if current != nil {
				holder = string(current.Value())
			}
			if holder == l.holder {
				// An earlier Create of this instance was stored though its answer was lost (the server was slow
				// or restarting): the lease is its own. Renewed now, it holds from now on; waiting for it to
				// expire would leave every placer idle for a TTL.
				sent := time.Now()
				if revision, err := kv.Update(ctx, key, []byte(l.holder), current.Revision()); err == nil {
					l.revision = revision
					l.validUntil.Store(sent.Add(ttl).UnixNano())
					log.Info("holding the lease", "lease", key, "holder", l.holder)
					return l, nil
				}
			}
			if !waiting {
				log.Info("another instance holds the lease; standing by", "lease", key, "holder", holder)
				waiting = true
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(ttl / 5):
		}
	}
}

// keep renews the lease every third of its TTL until ctx is done. A renewal the server did not answer (its
// bucket's leader being elected, a reconnect) is tried again every leaseRenewRetry while the lease still holds:
// giving up at once would stop and rebuild the placer for a blip. It fails when the lease was taken over, or
// could not be renewed before its deadline.
func (l *lease) keep(ctx context.Context, ttl time.Duration) error {
	timer := time.NewTimer(ttl / 3)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
			renewCtx, cancel := context.WithTimeout(ctx, ttl/3)
			sent := time.Now()
			revision, err := l.kv.Update(renewCtx, l.key, []byte(l.holder), l.revision)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				if errors.Is(err, jetstream.ErrKeyExists) && l.held() {
					// A renewal stored though its answer was lost moved the revision on; still ours, it is renewed
					// from there.
					if current, getErr := l.kv.Get(ctx, l.key); getErr == nil && string(current.Value()) == l.holder {
						l.revision = current.Revision()
						timer.Reset(0)
						continue
					}
				}
				if errors.Is(err, jetstream.ErrKeyExists) || !l.held() {
					return fmt.Errorf("%w: renew %s: %w", errLeaseLost, l.key, err)
				}
				l.log.Warn("lease not renewed; trying again while it holds", "lease", l.key, "error", err)
				timer.Reset(min(leaseRenewRetry, ttl/3))
				continue
			}
			l.revision = revision
			l.validUntil.Store(sent.Add(ttl).UnixNano())
			timer.Reset(ttl / 3)
		}
	}
}

// leaseRenewRetry is how soon a renewal the server did not answer is tried again.
const leaseRenewRetry = time.Second

// release gives the lease up at once, so a standby takes over without waiting for the TTL.
func (l *lease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.revision)); err != nil {
		l.log.Debug("lease not released; it will expire", "lease", l.key, "error", err)
	}
}

// leadership is what a placer holding the lease checks and ends it with.
type leadership struct {
	// held reports whether the lease certainly still holds.
	held func() bool
	// lost ends the leadership, with why.
	lost func(error)
}

// takeFence records this leadership on the fence subjects (bus.TakeFence), trying again while the server does not
// answer. Fenced out, it reports the lease lost: another placer took over since this one took the lease.
func takeFence(ctx context.Context, b *Bus, name string, log *slog.Logger) (*bus.Fence, error) {
	var fence *bus.Fence
	var fenced error
	err := untilAnswered(ctx, time.Second, log, "placer fence", func() error {
		var err error
		fence, err = bus.TakeFence(ctx, b.JetStream, &schemas.PlacerLeader{Placer: name, Since: time.Now().UTC()})
		if errors.Is(err, bus.ErrFenced) {
			fenced = err
			return nil
		}
		return err
	})
	if fenced != nil {
		return nil, fmt.Errorf("%w: %w", errLeaseLost, fenced)
	}
	return fence, err
}

// fencedPublisher is the publisher of a placer holding the lease: what it publishes is stored only while its
// fence holds, and being fenced out ends its leadership.
type fencedPublisher struct {
	fence *bus.Fence
	lost  func(error)
}

// PublishMsgs implements placer.FencedPublisher.
func (p fencedPublisher) PublishMsgs(ctx context.Context, msgs []*nats.Msg) error {
	err := p.fence.PublishMsgs(ctx, msgs)
	if errors.Is(err, bus.ErrFenced) {
		p.lost(fmt.Errorf("%w: %w", errLeaseLost, err))
	}
	return err
}

// Publish implements placer.EventPublisher, fenced like PublishMsgs.
func (p fencedPublisher) Publish(ctx context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error) {
	msg, err := bus.EncodeWithID(subject, e)
	if err != nil {
		return nil, err
	}
	if err := p.PublishMsgs(ctx, []*nats.Msg{msg}); err != nil {
		return nil, err
	}
	return &jetstream.PubAck{}, nil
}
