package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// ContentTypeJSON is the datacontenttype of every fleetflow event.
const ContentTypeJSON = "application/json"

// ExtensionVerdict is the CloudEvents extension attribute of a decision that carries a verdict, set to the
// verdict's status: a reader that wants only verdicts (the status writer) skips the other decisions unread.
const ExtensionVerdict = "verdict"

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
	TypePlacerLeader:     func() Payload { return &PlacerLeader{} },
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

// EncodeData checks that payload is valid for eventType, a type of this contract, and returns what an
// event's data holds: the payload's JSON, or the payload for a JSON encoder to write.
func EncodeData(eventType string, payload Payload) (any, error) {
	if _, known := payloadFactories[eventType]; !known {
		return nil, fmt.Errorf("event type %q is not defined in schemas", eventType)
	}
	if err := payload.Validate(); err != nil {
		return nil, fmt.Errorf("%s payload: %w", eventType, err)
	}
	data, err := encodePayload(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	if maxDataBytes[eventType] == 0 {
		return data, nil
	}
	// A bounded type is encoded here, as the event would encode it, so its producer learns of an oversized
	// payload (and logs it, naming the subject) instead of every consumer refusing it.
	encoded, ok := data.([]byte)
	if !ok {
		if encoded, err = json.Marshal(data); err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", eventType, err)
		}
	}
	if err := checkDataSize(eventType, len(encoded)); err != nil {
		return nil, fmt.Errorf("%s payload: %w", eventType, err)
	}
	return encoded, nil
}

// MarshalData is EncodeData's result as JSON: the bytes an event of eventType carrying payload holds.
func MarshalData(eventType string, payload Payload) ([]byte, error) {
	data, err := EncodeData(eventType, payload)
	if err != nil {
		return nil, err
	}
	if encoded, ok := data.([]byte); ok {
		return encoded, nil
	}
	encoded, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	return encoded, nil
}

// ErrInvalidPayload is what DecodeData's error wraps when the data decoded but its payload is not valid (a
// quantity that does not parse, or Validate refused it), as against data that is no payload of the type.
var ErrInvalidPayload = errors.New("invalid payload")

// DecodeData decodes and validates the data of an event of eventType. An error names the field at fault
// where it can (a quantity that does not parse), but not the event: the caller knows its id.
func DecodeData(eventType string, data []byte) (Payload, error) {
	factory, known := payloadFactories[eventType]
	if !known {
		return nil, fmt.Errorf("type %q is not a fleetflow event type", eventType)
	}
	if err := checkDataSize(eventType, len(data)); err != nil {
		return nil, err
	}
	payload := factory()
	decode := json.Unmarshal
	if d, ok := payload.(interface{ decodeJSON([]byte) error }); ok {
		decode = func(data []byte, _ any) error { return d.decodeJSON(data) }
	}
	if err := decode(data, payload); err != nil {
		if where := badQuantityPath(data, payload); where != "" {
			return nil, fmt.Errorf("%w: %s", ErrInvalidPayload, where)
		}
		return nil, fmt.Errorf("payload is not valid JSON for this type: %w", err)
	}
	if err := payload.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	return payload, nil
}
