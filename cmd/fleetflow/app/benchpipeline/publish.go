package benchpipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
)

// maxInFlight bounds the publishes awaiting their JetStream acknowledgement on one connection.
const maxInFlight = 4096

// asyncPublisher publishes on its own connection, as a producer process would, with a bounded number of
// publishes in flight; a failed acknowledgement fails the run instead of going unnoticed.
type asyncPublisher struct {
	nc *nats.Conn
	js jetstream.JetStream

	mu       sync.Mutex
	failures int
	firstErr error
}

func newAsyncPublisher(url, name string, options ...nats.Option) (*asyncPublisher, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name(name)}, options...)...)
	if err != nil {
		return nil, fmt.Errorf("connect %s to %s: %w", name, url, err)
	}
	p := &asyncPublisher{nc: nc}
	p.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(maxInFlight),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, msg *nats.Msg, err error) {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.failures++
			if p.firstErr == nil {
				p.firstErr = fmt.Errorf("publish to %s: %w", msg.Subject, err)
			}
		}))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream for %s: %w", name, err)
	}
	return p, nil
}

func (p *asyncPublisher) close() { p.nc.Close() }

// publishEvent encodes o in binary content mode with its id as Nats-Msg-Id, exactly as bus.Publisher does.
func (p *asyncPublisher) publishEvent(ctx context.Context, o outgoing) error {
	msg, err := bus.EncodeWithID(o.subject, o.event)
	if err != nil {
		return err
	}
	return p.publish(ctx, msg)
}

// publish sends msg without waiting for its acknowledgement, waiting only while maxInFlight are pending.
func (p *asyncPublisher) publish(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) error {
	for {
		_, err := p.js.PublishMsgAsync(msg, opts...)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			if err != nil {
				return fmt.Errorf("publish to %s: %w", msg.Subject, err)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// wait blocks until every publish so far is acknowledged, and reports the first that failed.
func (p *asyncPublisher) wait(ctx context.Context) error {
	select {
	case <-p.js.PublishAsyncComplete():
	case <-ctx.Done():
		return fmt.Errorf("waiting for %d publish acknowledgements: %w", p.js.PublishAsyncPending(), ctx.Err())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr != nil {
		return fmt.Errorf("%d publishes failed, the first: %w", p.failures, p.firstErr)
	}
	return nil
}
