package bus

import (
	"context"
	"errors"
	"fmt"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/observe"
)

// Publisher publishes CloudEvents to JetStream and waits for the stream's acknowledgement.
type Publisher struct {
	js jetstream.JetStream
}

// NewPublisher returns a publisher on js.
func NewPublisher(js jetstream.JetStream) *Publisher { return &Publisher{js: js} }

// LastStored returns the sequence of the last message stream holds on subject, 0 when it holds none.
func (p *Publisher) LastStored(ctx context.Context, stream, subject string) (uint64, error) {
	var s jetstream.Stream
	err := RetryTransient(ctx, func() (err error) {
		s, err = p.js.Stream(ctx, stream)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", stream, err)
	}
	msg, err := LastMessage(ctx, s, subject)
	if err != nil || msg == nil {
		return 0, err
	}
	return msg.Sequence, nil
}

// LastMessage is stream's last message on subject, nil when it holds none. A read failing while the stream
// elects a leader is retried: the handlers that ask would otherwise fail and wait for a redelivery, or, when the
// nak is lost with the old leader, for the whole ack wait.
func LastMessage(ctx context.Context, stream jetstream.Stream, subject string) (*jetstream.RawStreamMsg, error) {
	var msg *jetstream.RawStreamMsg
	err := RetryTransient(ctx, func() (err error) {
		msg, err = stream.GetLastMsgForSubject(ctx, subject)
		return err
	})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last message on %s in %s: %w", subject, stream.CachedInfo().Config.Name, err)
	}
	return msg, nil
}

// Publish stores e on subject. The event id is the Nats-Msg-Id, so publishing the same content twice
// within the stream's duplicate window stores it once; Duplicate in the ack reports that case. That is also
// why a publish that fails transiently (a replicated stream electing a leader) is retried here: if the first
// attempt was stored after all, the retry is acknowledged as a duplicate.
func (p *Publisher) Publish(ctx context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error) {
	msg, err := EncodeWithID(subject, e)
	if err != nil {
		return nil, err
	}
	var ack *jetstream.PubAck
	err = RetryTransient(ctx, func() (err error) {
		ack, err = p.js.PublishMsg(ctx, msg)
		return err
	})
	if err != nil {
		observe.PublishErrors.WithLabelValues(e.Type()).Inc()
		return nil, fmt.Errorf("publish %s %q to %s: %w", e.Type(), e.ID(), subject, err)
	}
	observe.EventsPublished.WithLabelValues(e.Type()).Inc()
	return ack, nil
}

// PublishAsync stores e on subject without waiting: the future reports the stream's acknowledgement or
// the error. Like Publish, the event id is the Nats-Msg-Id. Callers bound how many they leave pending.
func (p *Publisher) PublishAsync(subject string, e cloudevents.Event) (jetstream.PubAckFuture, error) {
	msg, err := EncodeWithID(subject, e)
	if err != nil {
		return nil, err
	}
	future, err := p.js.PublishMsgAsync(msg)
	if err != nil {
		observe.PublishErrors.WithLabelValues(e.Type()).Inc()
		return nil, fmt.Errorf("publish %s %q to %s: %w", e.Type(), e.ID(), subject, err)
	}
	observe.EventsPublished.WithLabelValues(e.Type()).Inc()
	return future, nil
}

// Republish sends again a message published before (a future's Msg), with its headers and so its
// Nats-Msg-Id: stored already, the stream drops it as a duplicate and acknowledges it again. It is how a
// publish whose acknowledgement was lost (the stream's leader died with it in flight) is made certain.
func (p *Publisher) Republish(msg *nats.Msg) (jetstream.PubAckFuture, error) {
	future, err := p.js.PublishMsgAsync(&nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data})
	if err != nil {
		return nil, fmt.Errorf("publish %q to %s again: %w", msg.Header.Get(jetstream.MsgIDHeader), msg.Subject, err)
	}
	return future, nil
}
