package bus_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// batchFixture runs a batching ConsumeLoop over the placer's consumer and records what it handled.
type batchFixture struct {
	t        *testing.T
	ctx      context.Context
	consumer jetstream.Consumer
	pub      *bus.Publisher

	mu sync.Mutex
	// handled counts deliveries per workload name; unflushed lists names handled since the last flush.
	handled   map[string]int
	unflushed []string
	flushes   int
}

func newBatchFixture(t *testing.T) *batchFixture {
	t.Helper()
	_, js := startJetStream(t)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	log, _ := testLogger(t)
	consumer, _, _ := placerConsumer(t, js, log)
	return &batchFixture{t: t, ctx: ctx, consumer: consumer, pub: bus.NewPublisher(js), handled: map[string]int{}}
}

func (f *batchFixture) publish(names ...string) {
	f.t.Helper()
	publishWorkloads(f.t, f.pub, names...)
}

// run starts the loop; fail decides whether handling a delivery fails, flushFails whether the n-th flush
// (from 1), given the names handled since the previous flush, fails.
func (f *batchFixture) run(fail func(name string, attempt uint64) error, flushFails func(n int, batch []string) bool) {
	log, _ := testLogger(f.t)
	loop := &bus.ConsumeLoop{Consumer: f.consumer, Log: log,
		Handle: func(_ context.Context, d bus.Delivery) error {
			name := d.Payload.(*schemas.WorkloadChanged).Ref().Name
			f.mu.Lock()
			defer f.mu.Unlock()
			f.handled[name]++
			if err := fail(name, d.Attempt); err != nil {
				return err
			}
			f.unflushed = append(f.unflushed, name)
			return nil
		},
		Flush: func(ctx context.Context) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.flushes++
			batch := f.unflushed
			f.unflushed = nil
			// Nothing of the batch may be acknowledged before its flush.
			if info, err := f.consumer.Info(ctx); err != nil {
				f.t.Errorf("consumer info: %v", err)
			} else if info.NumAckPending < len(batch) {
				f.t.Errorf("flush of %v: only %d messages await acknowledgement", batch, info.NumAckPending)
			}
			if flushFails(f.flushes, batch) {
				return fmt.Errorf("flush %d refused", f.flushes)
			}
			return nil
		},
	}
	done := make(chan error, 1)
	go func() { done <- loop.Run(f.ctx) }()
	f.t.Cleanup(func() {
		if err := <-done; err != nil {
			f.t.Errorf("loop ended with %v", err)
		}
	})
}

func (f *batchFixture) waitSettled(want int) {
	f.t.Helper()
	waitSettled(f.t, f.ctx, f.consumer, want)
}

// waitSettled waits until consumer has nothing pending or unacknowledged and has acknowledged everything up to
// stream sequence want.
func waitSettled(t *testing.T, ctx context.Context, consumer jetstream.Consumer, want int) {
	t.Helper()
	eventually(t, "every message acknowledged", func() bool {
		info, err := consumer.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && int(info.AckFloor.Stream) == want
	})
}

// TestConsumeLoopBatchRedeliveredWhenFlushFails: a failed flush hands every message of its batch back, so
// each is handled again, and every message is acknowledged in the end.
func TestConsumeLoopBatchRedeliveredWhenFlushFails(t *testing.T) {
	f := newBatchFixture(t)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	f.publish(names...)
	var firstBatch []string
	f.run(func(string, uint64) error { return nil }, func(n int, batch []string) bool {
		if n == 1 {
			firstBatch = slices.Clone(batch)
			return true
		}
		return false
	})
	f.waitSettled(len(names))
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(firstBatch) == 0 {
		t.Fatal("the first flush saw no handled message")
	}
	for _, name := range names {
		want := 1
		if slices.Contains(firstBatch, name) {
			want = 2 // its batch's flush failed
		}
		if f.handled[name] != want {
			t.Errorf("%s handled %d times, want %d (first batch %v)", name, f.handled[name], want, firstBatch)
		}
	}
}

// TestConsumeLoopBatchSettlesBeforeAFailure: when a handler fails in the middle of a batch, the messages
// handled before it are flushed and acknowledged, and only the failed one is retried.
func TestConsumeLoopBatchSettlesBeforeAFailure(t *testing.T) {
	f := newBatchFixture(t)
	names := []string{"before-1", "before-2", "fails-once", "after-1", "after-2"}
	f.publish(names...)
	f.run(func(name string, attempt uint64) error {
		if name == "fails-once" && attempt == 1 {
			return errors.New("apiserver unavailable")
		}
		return nil
	}, func(int, []string) bool { return false })
	f.waitSettled(len(names))
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, name := range names {
		want := 1
		if name == "fails-once" {
			want = 2
		}
		if f.handled[name] != want {
			t.Errorf("%s handled %d times, want %d", name, f.handled[name], want)
		}
	}
}
