package codec

import (
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/fleetflow/fleetflow/schemas"
)

// NewEvent builds a valid CloudEvent carrying payload. The id is derived from the content identity
// (see the schemas *ID functions) because it doubles as the JetStream Nats-Msg-Id, which drops duplicate
// publishes.
func NewEvent(eventType, source, subject, id string, payload schemas.Payload) (cloudevents.Event, error) {
	data, err := schemas.EncodeData(eventType, payload)
	if err != nil {
		return cloudevents.Event{}, fmt.Errorf("%s: %w", subject, err)
	}
	e := cloudevents.New()
	e.SetID(id)
	e.SetType(eventType)
	e.SetSource(source)
	e.SetSubject(subject)
	e.SetTime(time.Now().UTC())
	if d, ok := payload.(*schemas.PlacementDecided); ok && d.Verdict != nil {
		e.SetExtension(schemas.ExtensionVerdict, string(d.Verdict.Status))
	}
	if err := e.SetData(schemas.ContentTypeJSON, data); err != nil {
		return cloudevents.Event{}, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	if err := e.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("cloudevent %s: %w", id, err)
	}
	return e, nil
}

// DecodePayload checks that e is a valid CloudEvent of a known type and returns its validated payload.
func DecodePayload(e cloudevents.Event) (schemas.Payload, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("invalid cloudevent: %w", err)
	}
	if ct := e.DataContentType(); ct != "" && ct != schemas.ContentTypeJSON {
		return nil, fmt.Errorf("cloudevent %s: datacontenttype %q, want %s", e.ID(), ct, schemas.ContentTypeJSON)
	}
	payload, err := schemas.DecodeData(e.Type(), e.Data())
	if err != nil {
		return nil, fmt.Errorf("cloudevent %s (%s): %w", e.ID(), e.Type(), err)
	}
	return payload, nil
}
