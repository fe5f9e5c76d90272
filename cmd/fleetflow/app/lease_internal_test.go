package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

func TestLeaseHeldUntilItsDeadline(t *testing.T) {
	l := &lease{}
	if l.held() {
		t.Error("a lease never taken counts as held")
	}
	l.validUntil.Store(time.Now().Add(time.Minute).UnixNano())
	if !l.held() {
		t.Error("a lease within its deadline does not count as held")
	}
	l.validUntil.Store(time.Now().Add(-time.Millisecond).UnixNano())
	if l.held() {
		t.Error("a lease past its deadline still counts as held")
	}
}

// TestFencedHandlerStopsPastTheLease: while the lease is held events are handled; once it is not, the event
// is not handled, the leader is told the lease is lost, and the handler fails so the event is handed back.
func TestFencedHandlerStopsPastTheLease(t *testing.T) {
	tests := []struct {
		name     string
		held     bool
		wantCall bool
		wantLost bool
	}{
		{name: "held: handled", held: true, wantCall: true},
		{name: "past the deadline: handed back", held: false, wantLost: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			var lostWith error
			handle := fenced(func() bool { return tt.held }, func(err error) { lostWith = err },
				func(context.Context, bus.Delivery) error { called = true; return nil })
			err := handle(t.Context(), bus.Delivery{})
			if called != tt.wantCall {
				t.Errorf("handler called = %v, want %v", called, tt.wantCall)
			}
			if (lostWith != nil) != tt.wantLost || (tt.wantLost && !errors.Is(lostWith, errLeaseLost)) {
				t.Errorf("lost with %v, want lost = %v (errLeaseLost)", lostWith, tt.wantLost)
			}
			if (err != nil) != tt.wantLost {
				t.Errorf("handler error = %v, want an error only when the lease is lost", err)
			}
		})
	}
}

// unansweringKV is a key-value bucket whose server does not answer the first creates (restarting, or out of
// reach for a while).
type unansweringKV struct {
	jetstream.KeyValue
	unanswered int
}

func (kv *unansweringKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	if kv.unanswered > 0 {
		kv.unanswered--
		return 0, fmt.Errorf("create %s: %w", key, context.DeadlineExceeded)
	}
	return kv.KeyValue.Create(ctx, key, value, opts...)
}

// TestLeaseWaitsOutAServerThatDoesNotAnswer: a placer standing by (or one that lost the lease while the server
// was away) takes the lease once the server answers again, instead of ending with the error: when the server
// restarted, every placer standing by ended with "take lease placer: context deadline exceeded".
func TestLeaseWaitsOutAServerThatDoesNotAnswer(t *testing.T) {
	tests := []struct {
		name       string
		unanswered int
	}{
		{name: "server answers", unanswered: 0},
		{name: "server away for a few tries", unanswered: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			b := OpenTestBus(t)
			const ttl = 250 * time.Millisecond
			kv, err := b.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: schemas.LeaseBucket, TTL: ttl, History: 1})
			if err != nil {
				t.Fatal(err)
			}
			flaky := &unansweringKV{KeyValue: kv, unanswered: tt.unanswered}
			l, err := takeLease(ctx, flaky, schemas.LeasePlacer, leaseHolder(), ttl, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatalf("take lease: %v", err)
			}
			if !l.held() || flaky.unanswered != 0 {
				t.Errorf("lease held = %t after %d unanswered tries left, want held after all of them", l.held(), flaky.unanswered)
			}
		})
	}
}

// lostAnswerKV is a key-value bucket whose first create is stored but answered with an error, as when the
// server's answer is lost on the way.
type lostAnswerKV struct {
	jetstream.KeyValue
	lost     bool
	revision uint64
}

func (kv *lostAnswerKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	revision, err := kv.KeyValue.Create(ctx, key, value, opts...)
	if err == nil && !kv.lost {
		kv.lost, kv.revision = true, revision
		return 0, fmt.Errorf("create %s: %w", key, context.DeadlineExceeded)
	}
	return revision, err
}

// TestLeaseStoredThoughItsAnswerWasLostIsTakenAtOnce: an instance whose create was stored but not answered finds
// its own holder on the key and holds the lease at once, instead of standing by for a TTL until its own key
// expires while no placer works.
func TestLeaseStoredThoughItsAnswerWasLostIsTakenAtOnce(t *testing.T) {
	ctx := t.Context()
	b := OpenTestBus(t)
	// Its retry comes a fifth of the TTL later; standing by, it would hold only once the key expired, a TTL on.
	const ttl = 30 * time.Second
	kv, err := b.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: schemas.LeaseBucket, TTL: ttl, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	lossy := &lostAnswerKV{KeyValue: kv}
	taken := make(chan *lease, 1)
	go func() {
		l, err := takeLease(ctx, lossy, schemas.LeasePlacer, leaseHolder(), ttl, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Errorf("take lease: %v", err)
		}
		taken <- l
	}()
	select {
	case l := <-taken:
		if l == nil || !l.held() || l.revision <= lossy.revision {
			t.Errorf("lease %+v, want it held, renewed past the create stored at revision %d", l, lossy.revision)
		}
	case <-time.After(ttl * 2 / 3):
		t.Fatal("the instance stood by behind its own lease")
	}
}

// TestLeaseHoldersOfOneProcessDiffer: two placers of one process (tests, a bench) never share a holder name, even
// when the clock reads the same for both: an instance takes a key carrying its own name back at once, so a shared
// name would have the second take the first's lease from under it.
func TestLeaseHoldersOfOneProcessDiffer(t *testing.T) {
	stopped := time.Unix(1_700_000_000, 0)
	clock := leaseClock
	leaseClock = func() time.Time { return stopped }
	t.Cleanup(func() { leaseClock = clock })
	if first, second := leaseHolder(), leaseHolder(); first == second {
		t.Errorf("two holders made at one clock reading are both %q", first)
	}
}

// heldThenLostKV is a key-value bucket whose key another instance holds at first; once the instance taking the
// lease stands by, that key expires, and the instance's next create is stored but answered with an error.
type heldThenLostKV struct {
	jetstream.KeyValue
	creates int
	lost    uint64
	updated bool
}

func (kv *heldThenLostKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	kv.creates++
	if kv.creates == 2 {
		if err := kv.Delete(ctx, key); err != nil { // the other instance's key expired
			return 0, err
		}
		revision, err := kv.KeyValue.Create(ctx, key, value, opts...)
		if err != nil {
			return 0, err
		}
		kv.lost = revision
		return 0, fmt.Errorf("create %s: %w", key, context.DeadlineExceeded)
	}
	return kv.KeyValue.Create(ctx, key, value, opts...)
}

func (kv *heldThenLostKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	kv.updated = true
	return kv.KeyValue.Update(ctx, key, value, last)
}

// TestLeaseStoredWhileStandingByIsTakenAtOnce: an instance standing by behind another one, whose create is stored
// once the other's key expired but not answered, finds its own holder on the key and holds the lease at once,
// rather than standing by behind itself until its own key expires.
func TestLeaseStoredWhileStandingByIsTakenAtOnce(t *testing.T) {
	ctx := t.Context()
	b := OpenTestBus(t)
	const ttl = 5 * time.Second
	kv, err := b.JetStream.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: schemas.LeaseBucket, TTL: ttl, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Create(ctx, schemas.LeasePlacer, []byte("another")); err != nil {
		t.Fatal(err)
	}
	flaky := &heldThenLostKV{KeyValue: kv}
	l, err := takeLease(ctx, flaky, schemas.LeasePlacer, leaseHolder(), ttl, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("take lease: %v", err)
	}
	if !l.held() || l.revision <= flaky.lost || !flaky.updated {
		t.Errorf("lease %+v (updated %t), want it held by renewing the create stored at revision %d, not by a create "+
			"once that key expired", l, flaky.updated, flaky.lost)
	}
}
