package bus

import (
	"context"
	"fmt"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
)

// Publisher publishes CloudEvents to JetStream and waits for the stream's acknowledgement.
type Publisher struct {
	js jetstream.JetStream
}

// NewPublisher returns a publisher on js.
func NewPublisher(js jetstream.JetStream) *Publisher { return &Publisher{js: js} }

// Publish stores e on subject. The event id is the Nats-Msg-Id, so publishing the same content twice
// within the stream's duplicate window stores it once; Duplicate in the ack reports that case.
func (p *Publisher) Publish(ctx context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error) {
	msg, err := Encode(subject, e)
	if err != nil {
		return nil, err
	}
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(e.ID()))
	if err != nil {
		return nil, fmt.Errorf("publish %s %q to %s: %w", e.Type(), e.ID(), subject, err)
	}
	return ack, nil
}

// PublishAsync stores e on subject without waiting: the future reports the stream's acknowledgement or
// the error. Like Publish, the event id is the Nats-Msg-Id. Callers bound how many they leave pending.
func (p *Publisher) PublishAsync(subject string, e cloudevents.Event) (jetstream.PubAckFuture, error) {
	msg, err := Encode(subject, e)
	if err != nil {
		return nil, err
	}
	future, err := p.js.PublishMsgAsync(msg, jetstream.WithMsgID(e.ID()))
	if err != nil {
		return nil, fmt.Errorf("publish %s %q to %s: %w", e.Type(), e.ID(), subject, err)
	}
	return future, nil
}
