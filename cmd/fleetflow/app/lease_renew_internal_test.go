package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// renewingKV answers the lease's renewals: the first unanswered ones fail as a server electing a leader
// does, then each is stored, or refused when the key is held by another.
type renewingKV struct {
	jetstream.KeyValue
	mu         sync.Mutex
	unanswered int
	takenBy    string
	renewed    int
}

func (k *renewingKV) Update(_ context.Context, _ string, _ []byte, last uint64) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.takenBy != "":
		return 0, jetstream.ErrKeyExists
	case k.unanswered != 0:
		k.unanswered--
		return 0, nats.ErrTimeout
	}
	k.renewed++
	return last + 1, nil
}

func (k *renewingKV) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	return nil, jetstream.ErrKeyNotFound
}

func (k *renewingKV) renewals() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.renewed
}

// A renewal the server does not answer is tried again while the lease holds, and only a takeover or the
// deadline passing loses it.
func TestLeaseRenewalRetriedWhileItHolds(t *testing.T) {
	const ttl = 3 * time.Second
	for _, tc := range []struct {
		name string
		kv   *renewingKV
		lost bool
	}{
		{name: "a renewal unanswered", kv: &renewingKV{unanswered: 1}},
		{name: "never answered", kv: &renewingKV{unanswered: -1}, lost: true},
		{name: "taken over", kv: &renewingKV{takenBy: "other"}, lost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lease{kv: tc.kv, key: "placer", holder: "me", revision: 1, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			l.validUntil.Store(time.Now().Add(ttl).UnixNano())
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- l.keep(ctx, ttl) }()
			if tc.lost {
				if err := <-done; !errors.Is(err, errLeaseLost) {
					t.Fatalf("keep ended with %v, want the lease lost", err)
				}
				return
			}
			deadline := time.Now().Add(2 * ttl)
			for tc.kv.renewals() == 0 {
				select {
				case err := <-done:
					t.Fatalf("keep ended with %v before a renewal went through", err)
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					t.Fatal("no renewal went through")
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("keep ended with %v", err)
			}
		})
	}
}
