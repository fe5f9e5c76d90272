package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetflow/fleetflow/internal/jsondec"
)

// Payload is the data of a fleetflow CloudEvent. Validate reports every problem with the field that has it.
type Payload interface {
	Validate() error
}

// ObjectRef identifies a Kubernetes object on the wire.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
}

// Group is the API group of the reference's apiVersion ("" for the core group).
func (r ObjectRef) Group() string {
	if group, _, found := strings.Cut(r.APIVersion, "/"); found {
		return group
	}
	return ""
}

// Key is a stable, human-readable identity: kind.group/namespace/name.
func (r ObjectRef) Key() string {
	kind := r.Kind
	if g := r.Group(); g != "" {
		kind += "." + g
	}
	if r.Namespace == "" {
		return kind + "/" + r.Name
	}
	return kind + "/" + r.Namespace + "/" + r.Name
}

func (r ObjectRef) String() string { return r.Key() }

// Validate checks the fields every reference needs; field names are prefixed with path.
func (r ObjectRef) validate(path string, needUID bool) error {
	var errs []error
	if r.APIVersion == "" {
		errs = append(errs, fmt.Errorf("%s.apiVersion: required", path))
	}
	if r.Kind == "" {
		errs = append(errs, fmt.Errorf("%s.kind: required", path))
	}
	if r.Name == "" {
		errs = append(errs, fmt.Errorf("%s.name: required", path))
	}
	if needUID && r.UID == "" {
		errs = append(errs, fmt.Errorf("%s.uid: required", path))
	}
	return errors.Join(errs...)
}

// RefOf reads the identity of an unstructured object.
func RefOf(object map[string]any) ObjectRef {
	meta, _ := object["metadata"].(map[string]any)
	str := func(m map[string]any, key string) string {
		s, _ := m[key].(string)
		return s
	}
	return ObjectRef{
		APIVersion: str(object, "apiVersion"),
		Kind:       str(object, "kind"),
		Namespace:  str(meta, "namespace"),
		Name:       str(meta, "name"),
		UID:        str(meta, "uid"),
	}
}

// ResourceVersionOf reads metadata.resourceVersion of an unstructured object.
func ResourceVersionOf(object map[string]any) string {
	meta, _ := object["metadata"].(map[string]any)
	rv, _ := meta["resourceVersion"].(string)
	return rv
}

// ObjectChanged carries a full Kubernetes object after a create or update: a control-plane workload,
// SchedulePolicy, ResourceInterface, Cluster or Namespace; the event type says which.
type ObjectChanged struct {
	Object map[string]any `json:"object"`
	// ObjectJSON is set by decoding: the object's bytes exactly as the event carried them, so a receiver that
	// keeps objects encoded need not encode it again. It is part of the decoded data, not a copy, and is never
	// written: senders set Object.
	ObjectJSON json.RawMessage `json:"-"`
}

// WorkloadChanged is the payload of a workload changed event.
type WorkloadChanged = ObjectChanged

// UnmarshalJSON decodes the payload with jsondec, which yields what encoding/json would in about 60% of the
// time; the placer decodes every workload version it is sent.
func (p *ObjectChanged) UnmarshalJSON(data []byte) error { return p.decodeJSON(data) }

// decodeJSON is UnmarshalJSON without encoding/json's validation pass in front of it (DecodePayload calls
// it directly). Like encoding/json, it matches the field name without regard to case, ignores other
// fields, and takes null for no object.
func (p *ObjectChanged) decodeJSON(data []byte) error {
	fields, kept, matches, err := jsondec.DecodeObjectKeeping(data, "object")
	if err != nil {
		return err
	}
	p.Object, p.ObjectJSON = nil, nil
	if matches == 0 {
		return nil
	}
	if matches > 1 {
		// encoding/json merges the objects of every member so named, in order (a null one drops what came
		// before): no one member's value is the object. Only a hand-made event names it twice; it may be slow.
		var plain struct {
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(data, &plain); err != nil {
			return err
		}
		p.Object = plain.Object
		return nil
	}
	raw, exact := fields["object"]
	if !exact {
		for name, v := range fields {
			if strings.EqualFold(name, "object") {
				raw = v // the one member so named
				break
			}
		}
	}
	if raw == nil {
		return nil
	}
	object, isObject := raw.(map[string]any)
	if !isObject {
		return fmt.Errorf("object: want a JSON object, got %T", raw)
	}
	p.Object, p.ObjectJSON = object, kept
	return nil
}

// Validate implements Payload.
func (p *ObjectChanged) Validate() error {
	if p.Object == nil {
		return errors.New("object: required")
	}
	if _, ok := p.Object["metadata"].(map[string]any); !ok {
		return errors.New("object.metadata: required object")
	}
	err := RefOf(p.Object).validate("object.metadata", true)
	if ResourceVersionOf(p.Object) == "" {
		err = errors.Join(err, errors.New("object.metadata.resourceVersion: required"))
	}
	return err
}

// Ref is the identity of the changed object.
func (p *ObjectChanged) Ref() ObjectRef { return RefOf(p.Object) }

// ObjectDeleted says a control-plane object is gone.
type ObjectDeleted struct {
	// Workload is the deleted object (named so for the workload events, the first of this shape).
	Workload ObjectRef `json:"workload"`
}

// WorkloadDeleted is the payload of a workload deleted event.
type WorkloadDeleted = ObjectDeleted

// Validate implements Payload.
func (p *ObjectDeleted) Validate() error { return p.Workload.validate("workload", true) }

// DecisionAction is what an applier must do with a workload on its cluster.
type DecisionAction string

// Decision actions.
const (
	ActionApply  DecisionAction = "Apply"
	ActionDelete DecisionAction = "Delete"
)

// PlacementDecided tells one cluster's applier to apply or delete one workload.
type PlacementDecided struct {
	// DecisionID is unique per decision and stable under redelivery of the input that caused it.
	DecisionID string         `json:"decisionID"`
	Workload   ObjectRef      `json:"workload"`
	Cluster    string         `json:"cluster"`
	Action     DecisionAction `json:"action"`
	// Sequence increases monotonically per workload, so an applier can skip a decision older than one applied.
	Sequence uint64 `json:"sequence"`
	// Epoch names the lifetime of the streams the sequence counts in (the events stream's creation time):
	// sequences of two epochs are not comparable, so streams recreated from scratch do not make every
	// object in the clusters look newer than any new decision.
	Epoch string `json:"epoch,omitempty"`
	// Object is the desired object, for Apply.
	Object map[string]any `json:"object,omitempty"`
	// ObjectJSON, when set, is the object already encoded, and is written in Object's place: a sender that
	// keeps objects encoded saves decoding and encoding them again. Validate takes it as the object without
	// decoding it. It is never read from the wire, so receivers always see Object.
	ObjectJSON json.RawMessage `json:"-"`
	// Replicas is the replica count written into Object for a Divide spread; 0 when not divided.
	Replicas int64  `json:"replicas,omitempty"`
	Policy   string `json:"policy,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// Clusters, for an Apply, are all the clusters the workload is placed on as of this decision (this one, or
	// a spread's), and Avoid the clusters it is kept off with why (it was moved off them). With them the
	// newest Apply of a workload says where it runs even after the message carrying its verdict (an earlier
	// Apply to the same cluster) gave way to it in the state stream.
	Clusters []string          `json:"clusters,omitempty"`
	Avoid    map[string]string `json:"avoid,omitempty"`
	// NamespaceLabels, for an Apply of a namespaced workload, are the labels of its namespace on the control
	// plane (but kubernetes.io/metadata.name, which every cluster sets itself). The applier gives them to the
	// namespace it creates for the copy, and to one it created before: a namespace that enforces a Pod
	// Security level, or opts in to a mesh, does so in every cluster its workloads run in.
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	// SourceContent, for an Apply whose object is not the control-plane object as it is (a Divide share), is
	// the content hash of the control-plane object the share was cut from, for the applier to put on the copy
	// (AnnotationSourceContent); empty otherwise, when the applier hashes Object itself.
	SourceContent string `json:"sourceContent,omitempty"`
	// Pins, for an Apply of a workload whose policy pins pods, are the nodes its pods were packed on in this
	// cluster (Pins.String); the applier writes them on the copy as AnnotationPins. Empty otherwise.
	Pins string `json:"pins,omitempty"`
	// Verdict is the Placed verdict this Apply carries out, when the placer reached it in the same cycle: it
	// rides with the first Apply of that cycle instead of as an event of its own, which would cost the
	// streams two more stored messages (the event and its state copy) per placed workload. Verdicts that
	// come with no new Apply (Unschedulable ones, or new reasons for a workload that stays where it is) are
	// events of their own, on VerdictSubject.
	Verdict *PlacementVerdict `json:"verdict,omitempty"`
}

// Validate implements Payload.
func (p *PlacementDecided) Validate() error {
	var errs []error
	if p.DecisionID == "" {
		errs = append(errs, errors.New("decisionID: required"))
	}
	errs = append(errs, p.Workload.validate("workload", true))
	if p.Cluster == "" {
		errs = append(errs, errors.New("cluster: required"))
	}
	if p.Sequence == 0 {
		errs = append(errs, errors.New("sequence: must be positive"))
	}
	switch p.Action {
	case ActionApply:
		// An object sent only pre-encoded (ObjectJSON) is the sender's own copy of the workload; its identity
		// is not decoded again here.
		switch got := RefOf(p.Object); {
		case p.Object == nil && len(p.ObjectJSON) == 0:
			errs = append(errs, errors.New("object: required for action Apply"))
		case p.Object != nil && (got.Name != p.Workload.Name || got.Namespace != p.Workload.Namespace ||
			got.Kind != p.Workload.Kind || got.APIVersion != p.Workload.APIVersion):
			errs = append(errs, fmt.Errorf("object: identity %s does not match workload %s", got, p.Workload))
		}
	case ActionDelete:
	default:
		errs = append(errs, fmt.Errorf("action: %q is not one of Apply, Delete", p.Action))
	}
	if p.Action != ActionApply && (len(p.Clusters) > 0 || len(p.Avoid) > 0 || len(p.NamespaceLabels) > 0) {
		errs = append(errs, fmt.Errorf("clusters, avoid, namespaceLabels: set on action %s, only Apply carries them", p.Action))
	}
	if len(p.Clusters) > 0 && !slices.Contains(p.Clusters, p.Cluster) {
		errs = append(errs, fmt.Errorf("clusters: %v do not include the decision's cluster %s", p.Clusters, p.Cluster))
	}
	if v := p.Verdict; v != nil {
		switch {
		case p.Action != ActionApply:
			errs = append(errs, fmt.Errorf("verdict: carried by action %s, only Apply carries one", p.Action))
		case v.Status != VerdictPlaced:
			errs = append(errs, fmt.Errorf("verdict.status: %s, only a Placed verdict rides with an Apply", v.Status))
		case v.Workload != p.Workload:
			errs = append(errs, fmt.Errorf("verdict.workload: %s is not the decision's workload %s", v.Workload, p.Workload))
		case !slices.Contains(v.Clusters, p.Cluster):
			errs = append(errs, fmt.Errorf("verdict.clusters: %v do not include the decision's cluster %s", v.Clusters, p.Cluster))
		}
		if err := v.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("verdict: %w", err))
		}
	}
	return errors.Join(errs...)
}

// PlacementApplied reports that an applier carried out a decision.
type PlacementApplied struct {
	DecisionID string         `json:"decisionID"`
	Workload   ObjectRef      `json:"workload"`
	Cluster    string         `json:"cluster"`
	Action     DecisionAction `json:"action"`
	Sequence   uint64         `json:"sequence"`
	// ResourceVersion is the object's resourceVersion in the workload cluster after an apply.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Validate implements Payload.
func (p *PlacementApplied) Validate() error {
	return validateOutcome(p.DecisionID, p.Workload, p.Cluster, p.Sequence)
}

// PlacementFailed reports that an applier gave up on a decision, with the API error.
type PlacementFailed struct {
	DecisionID string         `json:"decisionID"`
	Workload   ObjectRef      `json:"workload"`
	Cluster    string         `json:"cluster"`
	Action     DecisionAction `json:"action"`
	Sequence   uint64         `json:"sequence"`
	Error      string         `json:"error"`
	Attempts   int            `json:"attempts"`
}

// Validate implements Payload.
func (p *PlacementFailed) Validate() error {
	err := validateOutcome(p.DecisionID, p.Workload, p.Cluster, p.Sequence)
	if p.Error == "" {
		err = errors.Join(err, errors.New("error: required"))
	}
	return err
}

func validateOutcome(decisionID string, workload ObjectRef, cluster string, sequence uint64) error {
	var errs []error
	if decisionID == "" {
		errs = append(errs, errors.New("decisionID: required"))
	}
	errs = append(errs, workload.validate("workload", true))
	if cluster == "" {
		errs = append(errs, errors.New("cluster: required"))
	}
	if sequence == 0 {
		errs = append(errs, errors.New("sequence: must be positive"))
	}
	return errors.Join(errs...)
}
