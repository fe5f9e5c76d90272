package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
)

// ContentTypeJSON is the datacontenttype of every fleetflow event.
const ContentTypeJSON = "application/json"

// payloadFactories maps each event type to a constructor of its payload. An event type missing here is
// not part of the contract and is rejected by DecodePayload.
var payloadFactories = map[string]func() Payload{
	TypeWorkloadChanged:  func() Payload { return &WorkloadChanged{} },
	TypeWorkloadDeleted:  func() Payload { return &WorkloadDeleted{} },
	TypePlacementDecided: func() Payload { return &PlacementDecided{} },
	TypePlacementApplied: func() Payload { return &PlacementApplied{} },
	TypePlacementFailed:  func() Payload { return &PlacementFailed{} },
	TypePlacementVerdict: func() Payload { return &PlacementVerdict{} },
	TypeWorkloadAnalyzed: func() Payload { return &WorkloadAnalyzed{} },

	TypePolicyChanged:            func() Payload { return &ObjectChanged{} },
	TypePolicyDeleted:            func() Payload { return &ObjectDeleted{} },
	TypeResourceInterfaceChanged: func() Payload { return &ObjectChanged{} },
	TypeResourceInterfaceDeleted: func() Payload { return &ObjectDeleted{} },
	TypeClusterChanged:           func() Payload { return &ObjectChanged{} },
	TypeClusterDeleted:           func() Payload { return &ObjectDeleted{} },
	TypeNamespaceChanged:         func() Payload { return &ObjectChanged{} },
	TypeNamespaceDeleted:         func() Payload { return &ObjectDeleted{} },

	TypeNodeChanged:      func() Payload { return &NodeState{} },
	TypeNodeDeleted:      func() Payload { return &NodeDeleted{} },
	TypeClusterHeartbeat: func() Payload { return &ClusterHeartbeat{} },
	TypeClusterAPIs:      func() Payload { return &ClusterAPIs{} },
	TypeWorkloadStatus:   func() Payload { return &WorkloadStatus{} },
	TypePlacerTick:       func() Payload { return &PlacerTick{} },
}

// ExtensionVerdict is the CloudEvents extension attribute of a decision that carries a verdict, set to the
// verdict's status: a reader that wants only verdicts (the status writer) skips the other decisions unread.
const ExtensionVerdict = "verdict"

// NewEvent builds a valid CloudEvent carrying payload. The id is derived from the content identity
// (see the *ID functions) because it doubles as the JetStream Nats-Msg-Id, which drops duplicate publishes.
func NewEvent(eventType, source, subject, id string, payload Payload) (cloudevents.Event, error) {
	if _, known := payloadFactories[eventType]; !known {
		return cloudevents.Event{}, fmt.Errorf("event type %q is not defined in schemas", eventType)
	}
	if err := payload.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("%s payload for %s: %w", eventType, subject, err)
	}
	e := cloudevents.New()
	e.SetID(id)
	e.SetType(eventType)
	e.SetSource(source)
	e.SetSubject(subject)
	e.SetTime(time.Now().UTC())
	if d, ok := payload.(*PlacementDecided); ok && d.Verdict != nil {
		e.SetExtension(ExtensionVerdict, string(d.Verdict.Status))
	}
	data, err := encodePayload(payload)
	if err != nil {
		return cloudevents.Event{}, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	if err := e.SetData(ContentTypeJSON, data); err != nil {
		return cloudevents.Event{}, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	if err := e.Validate(); err != nil {
		return cloudevents.Event{}, fmt.Errorf("cloudevent %s: %w", id, err)
	}
	return e, nil
}

// DecodePayload checks that e is a valid CloudEvent of a known type and returns its validated payload.
func DecodePayload(e cloudevents.Event) (Payload, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("invalid cloudevent: %w", err)
	}
	factory, known := payloadFactories[e.Type()]
	if !known {
		return nil, fmt.Errorf("cloudevent %s: type %q is not a fleetflow event type", e.ID(), e.Type())
	}
	if ct := e.DataContentType(); ct != "" && ct != ContentTypeJSON {
		return nil, fmt.Errorf("cloudevent %s: datacontenttype %q, want %s", e.ID(), ct, ContentTypeJSON)
	}
	payload := factory()
	decode := json.Unmarshal
	if d, ok := payload.(interface{ decodeJSON([]byte) error }); ok {
		decode = func(data []byte, _ any) error { return d.decodeJSON(data) }
	}
	if err := decode(e.Data(), payload); err != nil {
		if where := badQuantityPath(e.Data(), payload); where != "" {
			return nil, fmt.Errorf("cloudevent %s (%s): invalid payload: %s", e.ID(), e.Type(), where)
		}
		return nil, fmt.Errorf("cloudevent %s (%s): payload is not valid JSON for this type: %w", e.ID(), e.Type(), err)
	}
	if err := payload.Validate(); err != nil {
		return nil, fmt.Errorf("cloudevent %s (%s): invalid payload: %w", e.ID(), e.Type(), err)
	}
	return payload, nil
}

// WorkloadChangedID identifies one version of a workload: the same object version is one event.
func WorkloadChangedID(ref ObjectRef, resourceVersion string) string {
	return ObjectChangedID("workload", ref, resourceVersion)
}

// ObjectChangedID identifies one version of any control-plane object, as read in one API version: when a CRD
// stops serving the version a kind was watched in, the same object read in another is a change (its
// apiVersion differs), which the stream must not drop as a duplicate of the first.
func ObjectChangedID(kind string, ref ObjectRef, resourceVersion string) string {
	return kind + "-changed/" + ref.UID + "/" + resourceVersion + "/" + ref.APIVersion
}

// ObjectDeletedID identifies the deletion of any control-plane object.
func ObjectDeletedID(kind string, ref ObjectRef) string { return kind + "-deleted/" + ref.UID }

// ContentID identifies an observation by a hash of its content, for state that has no resourceVersion of
// its own (a node's requested resources, a heartbeat tick, a workload's pending pods).
func ContentID(kind, identity string, content []byte) string {
	sum := sha256.Sum256(content)
	return kind + "/" + identity + "/" + hex.EncodeToString(sum[:12])
}

// WorkloadDeletedID identifies the deletion of one workload.
func WorkloadDeletedID(ref ObjectRef) string { return "workload-deleted/" + ref.UID }

// PlacementOutcomeID identifies an applier's report on one decision.
func PlacementOutcomeID(outcome, decisionID string) string {
	return "placement-" + outcome + "/" + decisionID
}
