package audit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// AuditQuery selects what an audit tail prints.
type AuditQuery struct {
	// Workload limits the tail to one workload; nil means every event.
	Workload *WorkloadSelector
	// Since is where history starts.
	Since time.Time
	// Follow keeps printing new events after the history.
	Follow bool
}

// WorkloadSelector names a workload as KIND[.GROUP]/NAMESPACE/NAME, or KIND[.GROUP]/NAME when
// cluster-scoped.
type WorkloadSelector struct {
	Group, Kind, Namespace, Name string
}

// ParseWorkloadSelector reads the --workload syntax.
func ParseWorkloadSelector(s string) (*WorkloadSelector, error) {
	parts := strings.Split(s, "/")
	var sel WorkloadSelector
	switch len(parts) {
	case 3:
		sel.Namespace, sel.Name = parts[1], parts[2]
		if sel.Namespace == "" {
			return nil, fmt.Errorf("workload %q: the namespace is empty; a cluster-scoped workload is KIND[.GROUP]/NAME", s)
		}
	case 2:
		sel.Name = parts[1]
	default:
		return nil, fmt.Errorf("workload %q: want KIND[.GROUP]/NAMESPACE/NAME or KIND[.GROUP]/NAME", s)
	}
	var dotted bool
	sel.Kind, sel.Group, dotted = strings.Cut(parts[0], ".")
	if sel.Kind == "" || sel.Name == "" {
		return nil, fmt.Errorf("workload %q: kind and name are required", s)
	}
	if dotted && sel.Group == "" {
		return nil, fmt.Errorf("workload %q: the group after %q is empty; leave the dot out for any group", s, sel.Kind+".")
	}
	return &sel, nil
}

// AuditRecord is one event of the audit trail.
type AuditRecord struct {
	Stream   string
	Sequence uint64
	Subject  string
	// Stored is when the server stored the message: history is merged in this order, which no producer's
	// clock can disturb.
	Stored  time.Time
	Event   cloudevents.Event
	Payload schemas.Payload
	// Err is set when the stored message is not a valid fleetflow event; auditors see it rather than lose it.
	Err error
}

// Verdict is the verdict the record holds: the verdict itself, or the Placed verdict an Apply carries; nil
// for any other record.
func (r AuditRecord) Verdict() *schemas.PlacementVerdict {
	switch p := r.Payload.(type) {
	case *schemas.PlacementVerdict:
		return p
	case *schemas.PlacementDecided:
		return p.Verdict
	}
	return nil
}

func analysisSummary(a *schemas.Analysis) string {
	if a.Error != "" {
		return "analysis failed: " + a.Error
	}
	if a.ResourceInterface == "" && a.TotalPods == 0 && len(a.Components) == 0 {
		return "described by no ResourceInterface: asks for nothing"
	}
	return fmt.Sprintf("analyzed by %s: %d pods, requests %s", a.ResourceInterface, a.TotalPods, formatResources(a.TotalRequests))
}

// Summary is a one-line human account of the record.
func (r AuditRecord) Summary() string {
	if r.Err != nil {
		return "unreadable message: " + r.Err.Error()
	}
	switch p := r.Payload.(type) {
	case *schemas.ObjectChanged:
		meta, _ := p.Object["metadata"].(map[string]any)
		return fmt.Sprintf("%s changed (resourceVersion %v, generation %v)", p.Ref().Key(), meta["resourceVersion"], meta["generation"])
	case *schemas.ObjectDeleted:
		return p.Workload.Key() + " deleted"
	case *schemas.WorkloadAnalyzed:
		return p.Workload.Key() + " " + analysisSummary(&p.Analysis)
	case *schemas.PlacementVerdict:
		return verdictSummary(p)
	case *schemas.PlacementDecided:
		s := fmt.Sprintf("%s decided %s on %s (sequence %d): %s", p.Workload.Key(), p.Action, p.Cluster, p.Sequence, p.Reason)
		if p.Verdict != nil {
			s += "; verdict: " + verdictSummary(p.Verdict)
		}
		return s
	case *schemas.PlacementApplied:
		if p.ResourceVersion == "" { // a Delete leaves no object to have one
			return fmt.Sprintf("%s %s applied on %s (sequence %d)", p.Workload.Key(), p.Action, p.Cluster, p.Sequence)
		}
		return fmt.Sprintf("%s %s applied on %s (sequence %d, resourceVersion %s)", p.Workload.Key(), p.Action, p.Cluster, p.Sequence, p.ResourceVersion)
	case *schemas.PlacementFailed:
		return fmt.Sprintf("%s %s FAILED on %s after %d attempts: %s", p.Workload.Key(), p.Action, p.Cluster, p.Attempts, p.Error)
	case *schemas.WorkloadStatus:
		if p.Gone {
			return fmt.Sprintf("%s gone from %s", p.Workload.Key(), p.Cluster)
		}
		return fmt.Sprintf("%s status on %s: %s, %d pending pods", p.Workload.Key(), p.Cluster, compactStatus(p.Status), p.PendingPods)
	case *schemas.NodeState:
		return fmt.Sprintf("node %s/%s: allocatable %s, requested %s", p.Cluster, p.Name, formatResources(p.Allocatable), formatResources(p.Requested))
	case *schemas.ClusterHeartbeat:
		return "heartbeat from " + p.Cluster
	case *schemas.ClusterAPIs:
		return fmt.Sprintf("cluster %s serves %d kinds", p.Cluster, len(p.APIs))
	case *schemas.NodeDeleted:
		return fmt.Sprintf("node %s/%s deleted", p.Cluster, p.Name)
	case *schemas.PlacerTick:
		return "placer tick at " + p.Time.UTC().Format(time.RFC3339)
	default:
		return r.Event.Type()
	}
}

// verdictSummary tells a verdict: what was asked for, the outcome, and why each other cluster was not chosen.
func verdictSummary(p *schemas.PlacementVerdict) string {
	s := p.Workload.Key() + " "
	if p.Analysis != nil {
		s += analysisSummary(p.Analysis) + ", "
	}
	s += schemas.VerdictOutcome(p.Status, p.Clusters)
	if p.Policy != "" {
		s += " by policy " + p.Policy
	}
	if p.Message != "" {
		s += ": " + p.Message
	}
	for _, c := range slices.Sorted(maps.Keys(p.Reasons)) {
		s += fmt.Sprintf("; %s: %s", c, p.Reasons[c])
	}
	return s
}

// AuditTail reads history from the events and decisions streams, merged in time order, and hands every
// record to emit; with Follow it then keeps emitting new records until ctx is done.
func AuditTail(ctx context.Context, js jetstream.JetStream, q AuditQuery, emit func(AuditRecord) error) error {
	eventFilters, decisionFilters := []string{schemas.SubjectAllEvents}, []string{schemas.SubjectAllDecisions}
	if w := q.Workload; w != nil {
		eventFilters, decisionFilters = nil, nil
		for _, f := range schemas.WorkloadFilters(w.Group, w.Kind, w.Namespace, w.Name) {
			if strings.HasPrefix(f, schemas.SubjectDecisionsRoot) {
				decisionFilters = append(decisionFilters, f)
			} else {
				eventFilters = append(eventFilters, f)
			}
		}
	}
	streams := []struct {
		name    string
		filters []string
	}{{schemas.StreamEvents, eventFilters}, {schemas.StreamDecisions, decisionFilters}}

	type source struct {
		name     string
		consumer jetstream.Consumer
		messages jetstream.MessagesContext
		history  []AuditRecord
	}
	var sources []*source
	defer func() {
		for _, s := range sources {
			if s.messages != nil {
				s.messages.Stop()
			}
			bus.DeleteOrderedConsumer(js, s.name, s.consumer)
		}
	}()
	for _, st := range streams {
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: st.filters, DeliverPolicy: jetstream.DeliverAllPolicy}
		if !q.Since.IsZero() {
			since := q.Since
			cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
		}
		consumer, err := js.OrderedConsumer(ctx, st.name, cfg)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("audit %s: the server has no such stream: no fleetflow part has used it yet, or it is not "+
				"the server fleetflow uses: %w", st.name, err)
		}
		if err != nil {
			return fmt.Errorf("audit %s: %w", st.name, err)
		}
		s := &source{name: st.name, consumer: consumer}
		sources = append(sources, s)
		info, err := consumer.Info(ctx)
		if err != nil {
			return fmt.Errorf("audit %s: %w", st.name, err)
		}
		messages, err := consumer.Messages(bus.PullOptions()...)
		if err != nil {
			return fmt.Errorf("audit %s: %w", st.name, err)
		}
		s.messages = messages
		// History is what is pending when the tail starts.
		for pending := info.NumPending; pending > 0; {
			msg, err := messages.Next()
			if err != nil {
				return fmt.Errorf("audit %s: %w", st.name, err)
			}
			rec, meta := toRecord(st.name, msg)
			s.history = append(s.history, rec)
			if meta == nil {
				break
			}
			pending = meta.NumPending
		}
	}
	var history []AuditRecord
	for _, s := range sources {
		history = append(history, s.history...)
	}
	slices.SortStableFunc(history, func(a, b AuditRecord) int { return a.Stored.Compare(b.Stored) })
	for _, rec := range history {
		if err := emit(rec); err != nil {
			return err
		}
	}
	if !q.Follow {
		return nil
	}
	live := make(chan AuditRecord)
	for _, s := range sources {
		go func() {
			for {
				msg, err := s.messages.Next()
				if err != nil {
					return
				}
				rec, _ := toRecord(s.name, msg)
				select {
				case live <- rec:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case rec := <-live:
			if err := emit(rec); err != nil {
				return err
			}
		}
	}
}

func toRecord(stream string, msg jetstream.Msg) (AuditRecord, *jetstream.MsgMetadata) {
	rec := AuditRecord{Stream: stream, Subject: msg.Subject()}
	meta, err := msg.Metadata()
	if err == nil {
		rec.Sequence, rec.Stored = meta.Sequence.Stream, meta.Timestamp
	}
	event, decodeErr := bus.Decode(msg.Headers(), msg.Data())
	if decodeErr != nil {
		// A message that is no CloudEvent at all still gets an event to hang its time on.
		rec.Err, rec.Event = decodeErr, cloudevents.New()
		rec.Event.SetTime(rec.Stored)
		return rec, meta
	}
	rec.Event = event
	rec.Payload, rec.Err = codec.DecodePayload(event)
	return rec, meta
}

func compactStatus(status map[string]any) string {
	if len(status) == 0 {
		return "no status"
	}
	if phase, ok := status["phase"].(string); ok {
		return "phase " + phase
	}
	conditions, _ := status["conditions"].([]any)
	var trueTypes []string
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["status"] == "True" {
			if t, ok := cond["type"].(string); ok {
				trueTypes = append(trueTypes, t)
			}
		}
	}
	if len(trueTypes) > 0 {
		return "conditions " + strings.Join(trueTypes, ",")
	}
	return fmt.Sprintf("%d status fields", len(status))
}
