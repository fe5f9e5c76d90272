package bus

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// miscountingJetStream hands out ordered consumers whose Info is wrapped by info, as a server whose count of
// pending messages is wrong would answer.
type miscountingJetStream struct {
	jetstream.JetStream
	info func(ctx context.Context, call int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error)
}

func (m *miscountingJetStream) OrderedConsumer(ctx context.Context, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	c, err := m.JetStream.OrderedConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, err
	}
	return &miscountingConsumer{Consumer: c, info: m.info}, nil
}

type miscountingConsumer struct {
	jetstream.Consumer
	calls atomic.Int32
	info  func(ctx context.Context, call int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error)
}

func (c *miscountingConsumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	return c.info(ctx, int(c.calls.Add(1)), c.Consumer)
}

// TestReadEventsStopsWhenTheServerSaysNothingIsPending: a read goes by what the server says is pending, not by
// the count it started from, which may count messages that never come (a server's subject state after kill -9,
// a prune between the count and the delivery); a server that cannot be asked, or keeps promising messages it
// does not deliver, still fails the read.
func TestReadEventsStopsWhenTheServerSaysNothingIsPending(t *testing.T) {
	defer func(wait time.Duration) { readWait = wait }(readWait)
	readWait = 100 * time.Millisecond

	srv, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, js, err := Connect(srv.ClientURL(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := ProvisionStreams(t.Context(), js, streams.DefaultOptions(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	events, err := js.Stream(t.Context(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	pub := NewPublisher(js)
	publishStatuses := func(cluster string, names ...string) {
		t.Helper()
		for _, name := range names {
			ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-a", Name: name, UID: "uid-" + name}
			subject := schemas.WorkloadStatusSubject(cluster, ref)
			e, err := codec.NewEvent(schemas.TypeWorkloadStatus, "/test", subject, subject,
				&schemas.WorkloadStatus{Cluster: cluster, Workload: ref})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pub.Publish(t.Context(), subject, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	filter := func(cluster string) string { return schemas.SubjectEventsPrefix + ".status." + cluster + ".>" }
	publishStatuses("east", "a", "b", "c")
	publishStatuses("west", "a", "b", "c")
	publishStatuses("north", "a", "b", "c")
	publishStatuses("south", "a", "b", "c")

	overcounted := func(by uint64) func(context.Context, int, jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
		return func(ctx context.Context, call int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
			info, err := c.Info(ctx)
			if err == nil && call == 1 {
				info.NumPending += by
			}
			return info, err
		}
	}
	for _, tc := range []struct {
		name    string
		cluster string
		info    func(ctx context.Context, call int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error)
		taken   int
		err     string
	}{
		{name: "the server counts what it holds", cluster: "east", info: overcounted(0), taken: 3},
		{name: "the count says more than there is", cluster: "empty", info: overcounted(5), taken: 0},
		{name: "messages counted are pruned before they are delivered", cluster: "west", taken: 0,
			info: func(ctx context.Context, call int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
				info, err := c.Info(ctx)
				if err == nil && call == 1 {
					err = events.Purge(ctx, jetstream.WithPurgeSubject(filter("west")))
				}
				return info, err
			}},
		{name: "the server cannot be asked again", cluster: "north", taken: 0, err: "cannot ask what is pending: consumer info refused",
			info: func(ctx context.Context, call int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
				if call == 1 {
					info, err := c.Info(ctx)
					if err == nil {
						err = events.Purge(ctx, jetstream.WithPurgeSubject(filter("north")))
					}
					return info, err
				}
				return nil, errors.New("consumer info refused")
			}},
		{name: "the server keeps promising what it does not deliver", cluster: "south", taken: 0,
			err: "the server says 3 messages are pending but delivered none within 1s",
			info: func(ctx context.Context, _ int, c jetstream.Consumer) (*jetstream.ConsumerInfo, error) {
				info, err := c.Info(ctx)
				if err == nil && info.NumPending == 0 {
					// The purge went through: the server forgot what it counted, this one does not.
					info.NumPending = 3
				} else if err == nil {
					err = events.Purge(ctx, jetstream.WithPurgeSubject(filter("south")))
				}
				return info, err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken := 0
			start := time.Now()
			err := ReadEvents(t.Context(), &miscountingJetStream{JetStream: js, info: tc.info}, schemas.StreamEvents,
				jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter(tc.cluster)}},
				func(string, schemas.Payload) { taken++ })
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("read failed: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("read error = %v, want one saying %q", err, tc.err)
			}
			if taken != tc.taken {
				t.Errorf("took %d events, want %d", taken, tc.taken)
			}
			// A wrong count costs a wait or two, not the read: each of the producer's kinds used to wait out a
			// 5 s fetch and fail.
			if elapsed := time.Since(start); tc.err == "" && elapsed > 10*readWait {
				t.Errorf("read took %s, want a few waits of %s at most", elapsed, readWait)
			}
		})
	}
}
