package benchpipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// outcome is what the placer persisted about one workload.
type outcome struct {
	// verdictAt is when a stream stored the workload's first verdict (of its own, or carried by an Apply);
	// zero until there is one. lastAt is when it stored the newest.
	verdictAt, lastAt time.Time
	// firstStatus is the status of that first verdict, lastStatus of the newest one.
	firstStatus, lastStatus schemas.VerdictStatus
	// decidedAt is when the stream stored the workload's first decision; zero while there is none.
	decidedAt time.Time
	decisions int
}

// watcher reads verdicts and decisions back from their streams with ordered consumers once the workload phase
// is over: the stream's own timestamp says when each was persisted, whenever it is read.
type watcher struct {
	nc *nats.Conn

	mu       sync.Mutex
	byObject map[string]int // workload subject tokens -> workload index
	outcomes []outcome
	verdicts int // workloads with a verdict
	// verdictMessages and verdictBytes count every verdict read and the bytes of their data.
	verdictMessages, verdictBytes int
	// lastDecisionSeq and lastVerdictSeq are the stream sequences of the newest decision and verdict read.
	lastDecisionSeq, lastVerdictSeq uint64
	err                             error
	changed                         chan struct{}

	contexts []jetstream.ConsumeContext
}

// objectTokens is the part of a workload's subjects that names it: group.kind.namespace.name.
func objectTokens(ref schemas.ObjectRef) string {
	return strings.TrimPrefix(schemas.VerdictSubject(ref), schemas.SubjectEventsPrefix+".verdict.")
}

// newWatcher connects with options (in process when the server is embedded).
func newWatcher(ctx context.Context, url string, refs []schemas.ObjectRef, options ...nats.Option) (*watcher, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("fleetflow-bench-watcher")}, options...)...)
	if err != nil {
		return nil, fmt.Errorf("connect watcher to %s: %w", url, err)
	}
	w := &watcher{nc: nc, byObject: make(map[string]int, len(refs)), outcomes: make([]outcome, len(refs)),
		changed: make(chan struct{}, 1)}
	for i, ref := range refs {
		w.byObject[objectTokens(ref)] = i
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	// headersOnly asks the server for the messages without their data: what the watcher reads of a decision
	// is in its subject and metadata.
	subscribe := func(stream string, filter string, headersOnly bool, handle func(jetstream.Msg)) error {
		s, err := js.Stream(ctx, stream)
		if err != nil {
			return fmt.Errorf("watch %s: %w", stream, err)
		}
		c, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter},
			DeliverPolicy: jetstream.DeliverAllPolicy, HeadersOnly: headersOnly})
		if err != nil {
			return fmt.Errorf("watch %s: %w", stream, err)
		}
		cc, err := c.Consume(handle)
		if err != nil {
			return fmt.Errorf("watch %s: %w", stream, err)
		}
		w.contexts = append(w.contexts, cc)
		return nil
	}
	if err := subscribe(schemas.StreamEvents, schemas.SubjectEventsPrefix+".verdict.>", false, w.onVerdict); err != nil {
		w.close()
		return nil, err
	}
	if err := subscribe(schemas.StreamDecisions, schemas.SubjectClusterDecisions, true, w.onDecision); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *watcher) close() {
	for _, cc := range w.contexts {
		cc.Stop()
	}
	w.nc.Close()
}

func (w *watcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

func (w *watcher) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	w.notify()
}

func (w *watcher) onVerdict(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		w.fail(fmt.Errorf("verdict on %s: %w", msg.Subject(), err))
		return
	}
	status, err := verdictStatus(msg.Data())
	if err != nil {
		w.fail(fmt.Errorf("verdict on %s: %w", msg.Subject(), err))
		return
	}
	v := struct{ Status schemas.VerdictStatus }{status}
	w.mu.Lock()
	w.verdictMessages++
	w.verdictBytes += len(msg.Data())
	i, ok := w.byObject[strings.TrimPrefix(msg.Subject(), schemas.SubjectEventsPrefix+".verdict.")]
	if ok {
		w.answer(&w.outcomes[i], meta.Timestamp, v.Status)
	}
	w.lastVerdictSeq = meta.Sequence.Stream
	w.mu.Unlock()
	w.notify()
}

// statusField is how a verdict's status starts in its JSON. The field follows the workload reference and
// the sequence, whose values cannot contain it, so its first occurrence is the status.
var statusField = []byte(`"status":"`)

// verdictStatus reads a verdict's status without decoding the rest, which holds a reason per rejected
// cluster.
func verdictStatus(data []byte) (schemas.VerdictStatus, error) {
	if i := bytes.Index(data, statusField); i >= 0 {
		rest := data[i+len(statusField):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return schemas.VerdictStatus(rest[:j]), nil
		}
	}
	var v struct {
		Status schemas.VerdictStatus `json:"status"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return "", err
	}
	return v.Status, nil
}

func (w *watcher) onDecision(msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		w.fail(fmt.Errorf("decision on %s: %w", msg.Subject(), err))
		return
	}
	// fleetflow.decisions.<cluster>.<group>.<kind>.<namespace>.<name>: cluster tokens hold no dots.
	rest := strings.TrimPrefix(msg.Subject(), schemas.SubjectDecisionsRoot+".")
	_, object, _ := strings.Cut(rest, ".")
	// The decision's id, "<uid>/<sequence>/<action>/<cluster>", says whether it is an Apply: the answer
	// Placed, whether it carries that verdict (the placer's first Apply of a placement, or the relay's) or
	// follows one of its own.
	apply := strings.Contains(msg.Headers().Get("ce-id"), "/"+string(schemas.ActionApply)+"/")
	w.mu.Lock()
	if i, ok := w.byObject[object]; ok {
		o := &w.outcomes[i]
		if o.decidedAt.IsZero() || meta.Timestamp.Before(o.decidedAt) {
			o.decidedAt = meta.Timestamp
		}
		if apply {
			w.answer(o, meta.Timestamp, schemas.VerdictPlaced)
		}
		o.decisions++
	}
	w.lastDecisionSeq = meta.Sequence.Stream
	w.mu.Unlock()
	w.notify()
}

// answer records a verdict stored at at. Verdicts and decisions are read from two streams side by side, so
// an answer may be read after a later one.
func (w *watcher) answer(o *outcome, at time.Time, status schemas.VerdictStatus) {
	if o.verdictAt.IsZero() {
		w.verdicts++
	}
	if o.verdictAt.IsZero() || at.Before(o.verdictAt) {
		o.verdictAt, o.firstStatus = at, status
	}
	if !at.Before(o.lastAt) {
		o.lastAt, o.lastStatus = at, status
	}
}

// waitFor blocks until cond, checked under the watcher's lock, holds.
func (w *watcher) waitFor(ctx context.Context, what string, cond func(w *watcher) bool) error {
	for {
		w.mu.Lock()
		done, err := cond(w), w.err
		w.mu.Unlock()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-w.changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}
