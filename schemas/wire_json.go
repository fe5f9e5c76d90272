package schemas

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/internal/jsonenc"
)

// appender is a payload that writes its own JSON. The placer sends a verdict and a decision for every
// workload it places, and encoding/json's reflection over their maps and objects was a tenth of the
// pipeline's CPU. The bytes are exactly encoding/json's for the same value (wire_json_test.go compares
// them), so receivers cannot tell which wrote a message.
type appender interface {
	appendJSON(buf []byte) ([]byte, error)
	sizeHint() int
}

// encodePayload is what NewEvent stores as an event's data.
func encodePayload(payload Payload) (any, error) {
	if a, ok := payload.(appender); ok {
		return a.appendJSON(make([]byte, 0, a.sizeHint()))
	}
	return payload, nil
}

// sizeHint is about the encoded size of a verdict, so its buffer is allocated once rather than grown:
// verdicts carry a reason and a code per rejected cluster, often several kilobytes.
func (p *PlacementVerdict) sizeHint() int {
	n := 512
	for c, r := range p.Reasons {
		n += 2*len(c) + len(r) + len(p.ReasonCodes[c]) + 16
	}
	if p.Analysis != nil {
		n += 256 + 96*len(p.Analysis.Components)
	}
	return n
}

// sizeHint is about the encoded size of a decision: its object and a few short fields.
func (p *PlacementDecided) sizeHint() int {
	n := 2048
	if len(p.ObjectJSON) > 0 {
		n = len(p.ObjectJSON) + 512
	}
	if p.Verdict != nil {
		n += p.Verdict.sizeHint()
	}
	return n
}

// MarshalJSON implements json.Marshaler with the hand-written encoding.
func (p *PlacementVerdict) MarshalJSON() ([]byte, error) { return p.appendJSON(nil) }

func (p *PlacementVerdict) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"workload":`...)
	b = appendRef(b, p.Workload)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, p.Sequence, 10)
	b = appendOptional(b, "epoch", p.Epoch)
	b = appendField(b, "status", string(p.Status))
	b = appendOptional(b, "policy", p.Policy)
	if len(p.Clusters) > 0 {
		b = appendStrings(append(b, `,"clusters":`...), p.Clusters)
	}
	if len(p.Replicas) > 0 {
		b = append(b, `,"replicas":{`...)
		for i, c := range sortedKeys(p.Replicas) {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonenc.AppendString(b, c)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(p.Replicas[c]), 10)
		}
		b = append(b, '}')
	}
	// A cluster's code and reason come together, so the two maps usually share their keys, sorted once.
	var reasonKeys []string
	if len(p.Reasons) > 0 {
		reasonKeys = sortedKeys(p.Reasons)
		b = appendStringMap(append(b, `,"reasons":`...), p.Reasons, reasonKeys)
	}
	if len(p.ReasonCodes) > 0 {
		codeKeys := reasonKeys
		if !hasExactly(p.ReasonCodes, reasonKeys) {
			codeKeys = sortedKeys(p.ReasonCodes)
		}
		b = appendStringMap(append(b, `,"reasonCodes":`...), p.ReasonCodes, codeKeys)
	}
	b = appendOptional(b, "message", p.Message)
	b = append(b, `,"viewSequence":`...)
	b = strconv.AppendUint(b, p.ViewSequence, 10)
	if p.Analysis != nil {
		var err error
		if b, err = p.Analysis.appendJSON(append(b, `,"analysis":`...)); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// AppendJSON appends the analysis as encoding/json would encode it. It is not a json.Marshaler on purpose: the
// tests compare the hand-written encodings with encoding/json's own, which a MarshalJSON would take over.
func (a *Analysis) AppendJSON(b []byte) ([]byte, error) { return a.appendJSON(b) }

func (a *Analysis) appendJSON(b []byte) ([]byte, error) {
	b = append(b, '{')
	if a.ResourceInterface != "" {
		b = append(b, `"resourceInterface":`...)
		b = jsonenc.AppendString(b, a.ResourceInterface)
		b = append(b, ',')
	}
	b = append(b, `"totalPods":`...)
	b = strconv.AppendInt(b, a.TotalPods, 10)
	var err error
	if len(a.TotalRequests) > 0 {
		if b, err = appendResources(append(b, `,"totalRequests":`...), a.TotalRequests); err != nil {
			return nil, err
		}
	}
	if len(a.Components) > 0 {
		b = append(b, `,"components":[`...)
		for i, c := range a.Components {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsonenc.AppendString(b, c.Name)
			b = appendOptional(b, "instance", c.Instance)
			b = append(b, `,"pods":`...)
			b = strconv.AppendInt(b, c.Pods, 10)
			if len(c.PodRequests) > 0 {
				if b, err = appendResources(append(b, `,"podRequests":`...), c.PodRequests); err != nil {
					return nil, err
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendOptional(b, "error", a.Error)
	return append(b, '}'), nil
}

// MarshalJSON implements json.Marshaler with the hand-written encoding; ObjectJSON, when set, is written
// as the object.
func (p *PlacementDecided) MarshalJSON() ([]byte, error) { return p.appendJSON(nil) }

func (p *PlacementDecided) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"decisionID":`...)
	b = jsonenc.AppendString(b, p.DecisionID)
	b = append(b, `,"workload":`...)
	b = appendRef(b, p.Workload)
	b = appendField(b, "cluster", p.Cluster)
	b = appendField(b, "action", string(p.Action))
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, p.Sequence, 10)
	b = appendOptional(b, "epoch", p.Epoch)
	switch {
	case len(p.ObjectJSON) > 0:
		b = append(append(b, `,"object":`...), p.ObjectJSON...)
	case p.Object != nil:
		var err error
		if b, err = jsonenc.Append(append(b, `,"object":`...), p.Object); err != nil {
			return nil, err
		}
	}
	if p.Replicas != 0 {
		b = append(b, `,"replicas":`...)
		b = strconv.AppendInt(b, p.Replicas, 10)
	}
	b = appendOptional(b, "policy", p.Policy)
	b = appendOptional(b, "reason", p.Reason)
	if len(p.Clusters) > 0 {
		b = appendStrings(append(b, `,"clusters":`...), p.Clusters)
	}
	if len(p.Avoid) > 0 {
		b = appendStringMap(append(b, `,"avoid":`...), p.Avoid, sortedKeys(p.Avoid))
	}
	if len(p.NamespaceLabels) > 0 {
		b = appendStringMap(append(b, `,"namespaceLabels":`...), p.NamespaceLabels, sortedKeys(p.NamespaceLabels))
	}
	b = appendOptional(b, "sourceContent", p.SourceContent)
	b = appendOptional(b, "pins", p.Pins)
	if p.Verdict != nil {
		var err error
		if b, err = p.Verdict.appendJSON(append(b, `,"verdict":`...)); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendRef(b []byte, r ObjectRef) []byte {
	b = append(b, `{"apiVersion":`...)
	b = jsonenc.AppendString(b, r.APIVersion)
	b = appendField(b, "kind", r.Kind)
	b = appendOptional(b, "namespace", r.Namespace)
	b = appendField(b, "name", r.Name)
	b = appendOptional(b, "uid", r.UID)
	return append(b, '}')
}

// appendField appends ,"name":"value"; appendOptional does so only for a non-empty value (omitempty).
func appendField(b []byte, name, value string) []byte {
	b = append(append(append(b, `,"`...), name...), `":`...)
	return jsonenc.AppendString(b, value)
}

func appendOptional(b []byte, name, value string) []byte {
	if value == "" {
		return b
	}
	return appendField(b, name, value)
}

// appendStringMap writes m with its keys in the order of keys, which must be m's keys sorted.
func appendStringMap(b []byte, m map[string]string, keys []string) []byte {
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		b = jsonenc.AppendString(b, m[k])
	}
	return append(b, '}')
}

func appendResources(b []byte, list corev1.ResourceList) ([]byte, error) {
	b = append(b, '{')
	for i, name := range sortedKeys(list) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, string(name))
		b = append(b, ':')
		q := list[name]
		quantity, err := q.MarshalJSON()
		if err != nil {
			return nil, err
		}
		b = append(b, quantity...)
	}
	return append(b, '}'), nil
}

// hasExactly reports whether m's keys are keys, which are distinct.
func hasExactly(m map[string]string, keys []string) bool {
	if len(m) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// sortedKeys returns m's keys in order. Unlike slices.Sorted(maps.Keys(m)) it sizes the slice up front: a
// verdict's reasons have a key per rejected cluster, tens of them, and growing the slice to hold them took
// as long as sorting it.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// appendStrings appends a JSON array of strings.
func appendStrings(b []byte, values []string) []byte {
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, v)
	}
	return append(b, ']')
}
