package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
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

func leaseHolder() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// acquireLease blocks until it holds key, or ctx is done.
func acquireLease(ctx context.Context, b *Bus, key string, ttl time.Duration, log *slog.Logger) (*lease, error) {
	kv, err := b.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: schemas.LeaseBucket, Description: "fleetflow leases: which instance of a singleton part works",
		TTL: ttl, History: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("lease bucket %s: %w", schemas.LeaseBucket, err)
	}
	l := &lease{kv: kv, key: key, holder: leaseHolder(), log: log}
	waiting := false
	for {
		sent := time.Now()
		revision, err := kv.Create(ctx, key, []byte(l.holder))
		if err == nil {
			l.revision = revision
			l.validUntil.Store(sent.Add(ttl).UnixNano())
			log.Info("holding the lease", "lease", key, "holder", l.holder)
			return l, nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("take lease %s: %w", key, err)
		}
		if !waiting {
			current, _ := kv.Get(ctx, key)
			holder := ""
			if current != nil {
				holder = string(current.Value())
			}
			log.Info("another instance holds the lease; standing by", "lease", key, "holder", holder)
			waiting = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(ttl / 5):
		}
	}
}

// keep renews the lease every third of its TTL until ctx is done; it fails when the lease was taken over
// or could not be renewed in time.
func (l *lease) keep(ctx context.Context, ttl time.Duration) error {
	ticker := time.NewTicker(ttl / 3)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
			renewCtx, cancel := context.WithTimeout(ctx, ttl/3)
			sent := time.Now()
			revision, err := l.kv.Update(renewCtx, l.key, []byte(l.holder), l.revision)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%w: renew %s: %w", errLeaseLost, l.key, err)
			}
			l.revision = revision
			l.validUntil.Store(sent.Add(ttl).UnixNano())
		}
	}
}

// release gives the lease up at once, so a standby takes over without waiting for the TTL.
func (l *lease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.kv.Delete(ctx, l.key, jetstream.LastRevision(l.revision)); err != nil {
		l.log.Debug("lease not released; it will expire", "lease", l.key, "error", err)
	}
}
