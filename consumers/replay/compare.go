package replay

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
)

// Divergence kinds.
const (
	// Missing: recorded, and not reproduced by the replay.
	Missing = "Missing"
	// Extra: produced by the replay, and not recorded.
	Extra = "Extra"
	// Differs: recorded and reproduced under the same id, with other contents.
	Differs = "Differs"
)

// Divergence is a recorded verdict or decision that the replay does not reproduce as it was.
type Divergence struct {
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	ID      string `json:"id"`
	// Workload is KIND/NAMESPACE/NAME.
	Workload string `json:"workload,omitempty"`
	// Cause is the sequence, in the events stream, of the event the output answered.
	Cause uint64 `json:"cause"`
	// Recorded and Replayed summarize each side; Fields names the payload fields that differ.
	Recorded string   `json:"recorded,omitempty"`
	Replayed string   `json:"replayed,omitempty"`
	Fields   []string `json:"fields,omitempty"`
}

// output is one verdict or decision, recorded or produced by the replay.
type output struct {
	subject, id string
	data        []byte
	cause       uint64
	workload    string
	summary     string
	epoch       string
	// outcome is where the verdict the output says puts the workload, nil for a Delete.
	outcome *Outcome
}

func (o *output) key() string { return o.subject + " " + o.id }

// verdictFields and decidedFields are the parts of a verdict and a decision that a replay reads. Decoding only
// them skips what makes outputs large (a decision's workload object, a verdict's analysis), which a replay
// compares as bytes and never needs decoded: decoding whole payloads was an eighth of a replay's CPU.
type verdictFields struct {
	Workload schemas.ObjectRef     `json:"workload"`
	Sequence uint64                `json:"sequence"`
	Epoch    string                `json:"epoch"`
	Status   schemas.VerdictStatus `json:"status"`
	Policy   string                `json:"policy"`
	Clusters []string              `json:"clusters"`
	Reasons  map[string]string     `json:"reasons"`
	Message  string                `json:"message"`
}

type decidedFields struct {
	Workload schemas.ObjectRef      `json:"workload"`
	Sequence uint64                 `json:"sequence"`
	Epoch    string                 `json:"epoch"`
	Action   schemas.DecisionAction `json:"action"`
	Cluster  string                 `json:"cluster"`
	Verdict  *verdictFields         `json:"verdict"`
}

// decodeOutput reads a placer output.
func decodeOutput(subject string, e cloudevents.Event) (*output, error) {
	return outputOf(subject, e.ID(), e.Type(), e.Data())
}

// effectOutput is what the lifecycle's effect e would be as recorded: its payload encoded as the placer
// publishes it. Its fields are read from the payload at hand rather than decoded again from the encoding.
func effectOutput(e lifecycle.Effect) (*output, error) {
	data, err := schemas.MarshalData(e.Type, e.Payload)
	if err != nil {
		return nil, fmt.Errorf("%s (%s): %w", e.ID, e.Type, err)
	}
	o := &output{subject: e.Subject, id: e.ID, data: data}
	switch p := e.Payload.(type) {
	case *schemas.PlacementDecided:
		d := decidedFields{Workload: p.Workload, Sequence: p.Sequence, Epoch: p.Epoch, Action: p.Action, Cluster: p.Cluster}
		if p.Verdict != nil {
			d.Verdict = fieldsOf(p.Verdict)
		}
		return o.ofDecided(&d)
	case *schemas.PlacementVerdict:
		return o.ofVerdict(fieldsOf(p))
	}
	return nil, fmt.Errorf("%s: type %s is no placer output", e.ID, e.Type)
}

// fieldsOf is what a replay reads of a verdict.
func fieldsOf(v *schemas.PlacementVerdict) *verdictFields {
	return &verdictFields{Workload: v.Workload, Sequence: v.Sequence, Epoch: v.Epoch, Status: v.Status, Policy: v.Policy,
		Clusters: v.Clusters, Reasons: v.Reasons, Message: v.Message}
}

// outputOf reads the placer output of eventType, id and data, published on subject.
func outputOf(subject, id, eventType string, data []byte) (*output, error) {
	o := &output{subject: subject, id: id, data: data}
	switch eventType {
	case schemas.TypePlacementDecided:
		var p decidedFields
		if err := json.Unmarshal(o.data, &p); err != nil {
			return nil, fmt.Errorf("cloudevent %s (%s): %w", id, eventType, err)
		}
		return o.ofDecided(&p)
	case schemas.TypePlacementVerdict:
		var p verdictFields
		if err := json.Unmarshal(o.data, &p); err != nil {
			return nil, fmt.Errorf("cloudevent %s (%s): %w", id, eventType, err)
		}
		return o.ofVerdict(&p)
	}
	return nil, fmt.Errorf("type %s is no placer output", eventType)
}

func (o *output) ofDecided(p *decidedFields) (*output, error) {
	o.cause, o.epoch = p.Sequence, p.Epoch
	o.summary = fmt.Sprintf("%s on %s", p.Action, p.Cluster)
	if p.Verdict != nil {
		o.outcome = p.Verdict.outcome()
		o.summary += ", " + schemas.VerdictOutcome(p.Verdict.Status, p.Verdict.Clusters)
	}
	return o.of(p.Workload)
}

func (o *output) ofVerdict(p *verdictFields) (*output, error) {
	o.cause, o.epoch, o.outcome = p.Sequence, p.Epoch, p.outcome()
	o.summary = schemas.VerdictOutcome(p.Status, p.Clusters)
	return o.of(p.Workload)
}

// of names the workload the output is about.
func (o *output) of(ref schemas.ObjectRef) (*output, error) {
	if ref.Kind == "" || ref.Name == "" || o.cause == 0 {
		return nil, fmt.Errorf("cloudevent %s: names no workload and sequence", o.id)
	}
	o.workload = workloadName(ref)
	return o, nil
}

func (v *verdictFields) outcome() *Outcome {
	return &Outcome{Status: v.Status, Clusters: v.Clusters, Policy: v.Policy, Reasons: v.Reasons, Message: v.Message}
}

// workloadName is how a replay names a workload in Divergence, Outcomes, the what-if report and Follow:
// KIND/NAMESPACE/NAME (KIND/NAME when cluster-scoped), the form users type to explain. It is not
// ObjectRef.Key, which adds the group to the kind.
func workloadName(ref schemas.ObjectRef) string {
	if ref.Namespace == "" {
		return ref.Kind + "/" + ref.Name
	}
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// comparison pairs recorded outputs with those the replay produces, in whatever order each side comes.
type comparison struct {
	recorded, produced map[string]*output
	matched            map[string]struct{}
	// inWindow says whether a divergence answering the event at a sequence is reported.
	inWindow    func(cause uint64) bool
	divergences []Divergence
	reproduced  int
}

func newComparison(inWindow func(uint64) bool) *comparison {
	return &comparison{recorded: map[string]*output{}, produced: map[string]*output{}, matched: map[string]struct{}{},
		inWindow: inWindow}
}

// add takes an output of one side (recorded when rec), and compares it once the other side has it.
func (c *comparison) add(o *output, rec bool) {
	key := o.key()
	if _, done := c.matched[key]; done {
		return // stored once, as the stream's duplicate window keeps it
	}
	mine, theirs := c.produced, c.recorded
	if rec {
		mine, theirs = c.recorded, c.produced
	}
	other, ok := theirs[key]
	if !ok {
		if _, dup := mine[key]; !dup {
			mine[key] = o
		}
		return
	}
	delete(theirs, key)
	c.matched[key] = struct{}{}
	recorded, replayed := o, other
	if !rec {
		recorded, replayed = other, o
	}
	if !c.inWindow(recorded.cause) {
		return
	}
	if fields := differingFields(recorded.data, replayed.data); len(fields) > 0 {
		c.divergences = append(c.divergences, Divergence{Kind: Differs, Subject: recorded.subject, ID: recorded.id,
			Workload: recorded.workload, Cause: recorded.cause, Recorded: recorded.summary, Replayed: replayed.summary, Fields: fields})
		return
	}
	c.reproduced++
}

// producedAs returns the replay's output under subject and id when its payload is data, byte for byte: a
// recorded output that the replay reproduced says what that one says, so it need not be decoded.
func (c *comparison) producedAs(subject, id string, data []byte) *output {
	o := c.produced[subject+" "+id]
	if o == nil || !bytes.Equal(o.data, data) {
		return nil
	}
	recorded := *o
	recorded.data = data
	return &recorded
}

// finish reports what either side had alone, and returns every divergence in the order of their causes.
func (c *comparison) finish() []Divergence {
	for _, o := range c.recorded {
		if c.inWindow(o.cause) {
			c.divergences = append(c.divergences, Divergence{Kind: Missing, Subject: o.subject, ID: o.id, Workload: o.workload,
				Cause: o.cause, Recorded: o.summary})
		}
	}
	for _, o := range c.produced {
		if c.inWindow(o.cause) {
			c.divergences = append(c.divergences, Divergence{Kind: Extra, Subject: o.subject, ID: o.id, Workload: o.workload,
				Cause: o.cause, Replayed: o.summary})
		}
	}
	c.recorded, c.produced = map[string]*output{}, map[string]*output{}
	slices.SortFunc(c.divergences, func(a, b Divergence) int {
		return cmp.Or(cmp.Compare(a.Cause, b.Cause), strings.Compare(a.Subject, b.Subject), strings.Compare(a.ID, b.ID))
	})
	return c.divergences
}

// differingFields names the top-level payload fields whose values differ, nil when the payloads say the same.
func differingFields(a, b []byte) []string {
	if bytes.Equal(a, b) {
		return nil
	}
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return []string{"(payload)"}
	}
	var fields []string
	for _, k := range slices.Sorted(maps.Keys(ma)) {
		if !reflect.DeepEqual(ma[k], mb[k]) {
			fields = append(fields, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mb)) {
		if _, ok := ma[k]; !ok {
			fields = append(fields, k)
		}
	}
	return fields
}
