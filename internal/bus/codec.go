package bus

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Binary content mode: CloudEvents attributes travel as ce- headers, the data as the message body.
const (
	headerPrefix      = "ce-"
	headerSpecVersion = "ce-specversion"
	headerID          = "ce-id"
	headerType        = "ce-type"
	headerSource      = "ce-source"
	headerSubject     = "ce-subject"
	headerTime        = "ce-time"
	headerDataSchema  = "ce-dataschema"
	headerContentType = "Content-Type"
)

// Encode turns e into a NATS message for subject in binary content mode.
func Encode(subject string, e cloudevents.Event) (*nats.Msg, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("encode cloudevent %q for %s: %w", e.ID(), subject, err)
	}
	msg := nats.NewMsg(subject)
	msg.Header.Set(headerSpecVersion, e.SpecVersion())
	msg.Header.Set(headerID, e.ID())
	msg.Header.Set(headerType, e.Type())
	msg.Header.Set(headerSource, e.Source())
	if s := e.Subject(); s != "" {
		msg.Header.Set(headerSubject, s)
	}
	if !e.Time().IsZero() {
		msg.Header.Set(headerTime, e.Time().UTC().Format(time.RFC3339Nano))
	}
	if s := e.DataSchema(); s != "" {
		msg.Header.Set(headerDataSchema, s)
	}
	if ct := e.DataContentType(); ct != "" {
		msg.Header.Set(headerContentType, ct)
	}
	for name, value := range e.Extensions() {
		msg.Header.Set(headerPrefix+name, fmt.Sprint(value))
	}
	msg.Data = e.Data()
	return msg, nil
}

// EncodeWithID is Encode with the event's id as the message's Nats-Msg-Id, as the streams store fleetflow's
// events: a second publish of the same event within the duplicate window is dropped.
func EncodeWithID(subject string, e cloudevents.Event) (*nats.Msg, error) {
	msg, err := Encode(subject, e)
	if err != nil {
		return nil, err
	}
	msg.Header.Set(jetstream.MsgIDHeader, e.ID())
	return msg, nil
}

// Decode reads a binary-mode CloudEvent from NATS headers and body. It fails, naming what is missing or
// wrong, for anything that is not a valid CloudEvent 1.0.
func Decode(header nats.Header, data []byte) (cloudevents.Event, error) {
	if header == nil || header.Get(headerSpecVersion) == "" {
		return cloudevents.Event{}, errors.New("not a cloudevent: no ce-specversion header")
	}
	e := cloudevents.New(header.Get(headerSpecVersion))
	if e.SpecVersion() != header.Get(headerSpecVersion) {
		return cloudevents.Event{}, fmt.Errorf("not a cloudevent: unsupported ce-specversion %q", header.Get(headerSpecVersion))
	}
	e.SetID(header.Get(headerID))
	e.SetType(header.Get(headerType))
	e.SetSource(header.Get(headerSource))
	if s := header.Get(headerSubject); s != "" {
		e.SetSubject(s)
	}
	if s := header.Get(headerTime); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return cloudevents.Event{}, fmt.Errorf("cloudevent %q: ce-time %q: %w", e.ID(), s, err)
		}
		e.SetTime(t)
	}
	if s := header.Get(headerDataSchema); s != "" {
		e.SetDataSchema(s)
	}
	for name := range header {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, headerPrefix) {
			continue
		}
		extension := strings.TrimPrefix(lower, headerPrefix)
		_, twice := e.Extensions()[extension]
		if (isAttribute(lower) && name != lower) || twice {
			return cloudevents.Event{}, headerCaseError(e.ID(), header)
		}
		if !isAttribute(lower) {
			e.SetExtension(extension, header.Get(name))
		}
	}
	e.SetDataContentType(header.Get(headerContentType))
	e.DataEncoded = data
	if err := e.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("invalid cloudevent: %w", err)
	}
	return e, nil
}

func isAttribute(header string) bool {
	switch header {
	case headerSpecVersion, headerID, headerType, headerSource, headerSubject, headerTime, headerDataSchema:
		return true
	}
	return false
}

// headerCaseError names the first header, in name order, whose spelling Decode cannot take: a CloudEvents
// attribute in other than lower case, which Decode reads by its lower-case name only and would drop, or the
// second of two headers naming one extension, whose value would otherwise be left to map order. The order
// keeps the message the same each time.
func headerCaseError(id string, header nats.Header) error {
	extensions := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(header)) {
		lower := strings.ToLower(name)
		switch {
		case !strings.HasPrefix(lower, headerPrefix):
		case isAttribute(lower):
			if name != lower {
				return fmt.Errorf("cloudevent %q: header %s: attributes are read in lower case only, as %s", id, name, lower)
			}
		default:
			if first, twice := extensions[lower]; twice {
				return fmt.Errorf("cloudevent %q: headers %s and %s both set extension %s", id, first, name,
					strings.TrimPrefix(lower, headerPrefix))
			}
			extensions[lower] = name
		}
	}
	return fmt.Errorf("cloudevent %q: headers spelt in other than lower case", id)
}
