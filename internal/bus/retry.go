package bus

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TransientFor bounds how long a JetStream call is retried while it fails transiently: a stream leader's
// election after its node died takes a few seconds, a meta leader's a little longer.
var TransientFor = 30 * time.Second

// transientFirst is the pause after the first transient failure; it doubles up to transientMax.
var (
	transientFirst = 100 * time.Millisecond
	transientMax   = 2 * time.Second
)

// Transient reports whether err is a JetStream call failing while a clustered stream has no leader (a node died
// and its replicas elect another) or the client reconnects to another node: the same call a moment later
// succeeds. A request that timed out counts only while ctx (the caller's) is alive: a caller's own deadline
// is not retried.
func Transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrDisconnected):
		return true
	case errors.As(err, &apiErr):
		// 503: JetStream (or its cluster) is temporarily unavailable, e.g. no meta or stream leader yet.
		return apiErr.Code == 503
	}
	return false
}

// RetryTransient calls f until it succeeds, fails otherwise than transiently, ctx ends or TransientFor has
// passed; it returns f's last error. Use it only for calls that are safe to repeat: reads, and publishes with a
// Nats-Msg-Id (a publish whose acknowledgement was lost is stored once, the retry acknowledged as duplicate).
func RetryTransient(ctx context.Context, f func() error) error {
	deadline := time.Now().Add(TransientFor)
	delay := transientFirst
	for {
		err := f()
		if !Transient(ctx, err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		delay = min(2*delay, transientMax)
	}
}
