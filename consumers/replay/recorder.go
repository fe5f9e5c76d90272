package replay

import (
	"context"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// recorder is the placer's publisher in a replay: it keeps what the placer sends instead of storing it.
type recorder struct {
	sent []sent
	seq  uint64
}

// sent is one event the placer published.
type sent struct {
	subject string
	event   cloudevents.Event
}

func (r *recorder) Publish(_ context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error) {
	r.sent = append(r.sent, sent{subject: subject, event: e})
	r.seq++
	stream := schemas.StreamEvents
	if strings.HasPrefix(subject, schemas.SubjectDecisionsRoot) {
		stream = schemas.StreamDecisions
	}
	return &jetstream.PubAck{Stream: stream, Sequence: r.seq}, nil
}

// take returns what was sent since the last call.
func (r *recorder) take() []sent {
	out := r.sent
	r.sent = nil
	return out
}

// placerInput reports whether the placer consumes subject (schemas.PlacerInputs).
func placerInput(subject string) bool {
	for _, filter := range schemas.PlacerInputs {
		if strings.HasPrefix(subject, strings.TrimSuffix(filter, ">")) {
			return true
		}
	}
	return false
}

// placerOutput reports whether subject of stream holds what the placer publishes: decisions, and verdicts
// that no Apply carries.
func placerOutput(stream, subject string) bool {
	return stream == schemas.StreamDecisions || strings.HasPrefix(subject, verdictRoot)
}

var verdictRoot = schemas.SubjectEventsPrefix + ".verdict."
