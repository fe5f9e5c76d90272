package placer

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// streamSourceHeader is set by JetStream on messages a stream sourced from another; its second field is
// the sequence in the origin stream.
const streamSourceHeader = "Nats-Stream-Source"

// Rebuild reads the state stream (the last message of every subject) into an empty placer, so a restarted
// placer knows every node, cluster, policy, workload and published decision without any other source.
// It then restores where each workload was placed and publishes only what is missing, so a restart makes
// no duplicate or conflicting decision.
func (p *Placer) Rebuild(ctx context.Context, js jetstream.JetStream) error {
	stream, err := js.Stream(ctx, schemas.StreamState)
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	if err := p.waitSourced(ctx, js, stream); err != nil {
		return err
	}
	copied, err := sourcedThrough(ctx, stream)
	if err != nil {
		return err
	}
	if err := p.setReplayFloor(ctx, js, copied[schemas.StreamEvents]); err != nil {
		return err
	}
	p.ctrl.BeginRebuild(time.Now())
	consumer, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	info, err := consumer.Info(ctx)
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	read := 0
	if info.NumPending > 0 {
		messages, err := consumer.Messages(bus.PullOptions()...)
		if err != nil {
			return fmt.Errorf("placer rebuild: %w", err)
		}
		for {
			msg, err := messages.Next()
			if err != nil {
				messages.Stop()
				return fmt.Errorf("placer rebuild: %w", err)
			}
			meta, _ := msg.Metadata()
			p.rebuildOne(msg)
			read++
			if meta == nil || meta.NumPending == 0 {
				break
			}
		}
		messages.Stop()
	}
	uncopied, err := p.readUncopied(ctx, js, copied)
	if err != nil {
		return err
	}
	caughtUp, err := p.catchUpFromHistory(ctx, js)
	if err != nil {
		return err
	}
	return p.finishRebuild(ctx, time.Now(), streamHistory{ctx: ctx, js: js}, read+uncopied, caughtUp)
}

// finishRebuild has the controller end, at at, the rebuild of a view read from messages of the state stream
// and caughtUp newer events of the history, and returns once what that published is stored.
func (p *Placer) finishRebuild(ctx context.Context, at time.Time, history lifecycle.History, messages, caughtUp int) error {
	effects, err := p.ctrl.FinishRebuild(at, history)
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	snap := p.ctrl.Snapshot()
	p.log.Info("placer view rebuilt from the state stream", "messages", messages, "newer_in_history", caughtUp,
		"workloads", p.ctrl.Tracking(), "clusters", len(snap.Clusters()), "policies_in_force", len(snap.Policies()),
		"view_sequence", snap.Index())
	_ = p.publish(ctx, effects) // a failure is the batch's, which Flush reports
	return p.Flush(ctx)
}

// waitSourced waits, briefly, until the state stream has copied what its sources held when the rebuild
// began, so the rebuild does not miss an event the durable consumer already acknowledged. A source the
// stream has not heard from yet (the stream is new, or its server just started) reports no lag however far
// behind it is, so a source counts as caught up only once the stream stored the origin's last sequence, or
// once it has heard from the source and the source reports no lag.
func (p *Placer) waitSourced(ctx context.Context, js jetstream.JetStream, stream jetstream.Stream) error {
	info, err := stream.Info(ctx)
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	originLast := map[string]uint64{}
	for _, s := range info.Sources {
		origin, err := js.Stream(ctx, s.Name)
		if err != nil {
			return fmt.Errorf("placer rebuild: source %s of %s: %w", s.Name, schemas.StreamState, err)
		}
		originLast[s.Name] = origin.CachedInfo().State.LastSeq
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		behind := sourcesBehind(info.Sources, originLast)
		if len(behind) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			p.log.Warn("rebuild: the state stream has not caught up with its sources; reading it as it is",
				"stream", schemas.StreamState, "behind", behind)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if info, err = stream.Info(ctx); err != nil {
			return fmt.Errorf("placer rebuild: %w", err)
		}
	}
}

// sourcesBehind names the sources not yet copied up to the origin sequences in originLast (see waitSourced).
func sourcesBehind(sources []*jetstream.StreamSourceInfo, originLast map[string]uint64) []string {
	var behind []string
	for _, s := range sources {
		stored := s.Seq >= originLast[s.Name]
		heardAndLevel := s.Active >= 0 && s.Lag == 0
		if !stored && !heardAndLevel {
			behind = append(behind, fmt.Sprintf("%s (copied up to %d of %d, lag %d)", s.Name, s.Seq, originLast[s.Name], s.Lag))
		}
	}
	return behind
}

func (p *Placer) rebuildOne(msg jetstream.Msg) {
	if event, payload, ok := decodeMessage(msg); ok {
		p.rebuildFrom(msg, event, payload, originSequence(msg.Headers().Get(streamSourceHeader)))
	}
}

// decodeMessage is msg's event and payload; ok is false for a message that is no valid event.
func decodeMessage(msg jetstream.Msg) (cloudevents.Event, schemas.Payload, bool) {
	event, err := bus.Decode(msg.Headers(), msg.Data())
	if err != nil {
		return event, nil, false
	}
	payload, err := codec.DecodePayload(event)
	return event, payload, err == nil
}

// rebuildFrom applies the event of msg, read at rebuild, at seq, its sequence in the events stream (or, for a
// decision, in the decisions stream); it reports whether it applied it.
func (p *Placer) rebuildFrom(msg jetstream.Msg, event cloudevents.Event, payload schemas.Payload, seq uint64) bool {
	if seq == 0 {
		return false
	}
	if !schemas.IsDecision(msg.Subject()) {
		if seq <= p.seen[msg.Subject()] {
			return false
		}
		p.markApplied(msg.Subject(), seq)
	}
	ev := lifecycle.Event{Subject: msg.Subject(), Sequence: seq, Type: event.Type(), Payload: payload, Time: event.Time()}
	if meta, err := msg.Metadata(); err == nil {
		ev.Stored = meta.Timestamp
	}
	if err := p.ctrl.Restore(ev); err != nil {
		p.log.Warn("rebuild: event not applied", "subject", msg.Subject(), "error", err)
	}
	return true
}

// historyCheckedSubjects are the subjects whose last event in the events stream a rebuild compares with what
// the state stream held: the objects users create and delete. Nodes, heartbeats and statuses are left out; their
// producers publish them again anyway, and there are many of them.
var historyCheckedSubjects = []string{
	schemas.SubjectEventsPrefix + ".workload.>",
	schemas.SubjectEventsPrefix + ".policy.>",
	schemas.SubjectEventsPrefix + ".resourceinterface.>",
	schemas.SubjectEventsPrefix + ".namespace.>",
	schemas.SubjectEventsPrefix + ".cluster.*.spec",
}

// catchUpFromHistory applies, after the state stream is read, each object's last event in the events stream
// that is newer than what the state stream held of it, and returns how many it applied. A server stopped
// uncleanly can bring back into the state stream messages that its per-subject limit, or the pruner, had
// removed: with no tombstone of the removal on disk, an object's first version could come back as its last,
// and a deleted workload be placed again. The events stream, which removes nothing but by age, still has its
// later versions and its deletion.
func (p *Placer) catchUpFromHistory(ctx context.Context, js jetstream.JetStream) (int, error) {
	// Decisions made at rebuild take the placer's sequence: it must not fall back to an older event's.
	last, applied := p.ctrl.Sequence(), 0
	err := bus.ReadMessages(ctx, js, schemas.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: historyCheckedSubjects, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy},
		func(msg jetstream.Msg, _ time.Time) {
			meta, err := msg.Metadata()
			if err != nil {
				return
			}
			last = max(last, meta.Sequence.Stream)
			event, payload, ok := decodeMessage(msg)
			if !ok {
				return
			}
			if _, deleted := payload.(*schemas.ObjectDeleted); deleted && p.seen[msg.Subject()] == 0 {
				return // the state stream holds nothing of it: pruned once it was gone, as it should be
			}
			if p.rebuildFrom(msg, event, payload, meta.Sequence.Stream) {
				applied++
				p.logCaughtUp(msg.Subject(), meta.Sequence.Stream)
			}
		})
	if err != nil {
		return applied, fmt.Errorf("placer rebuild: history: %w", err)
	}
	p.ctrl.AdvanceSequence(last)
	return applied, nil
}

// logCaughtUp tells that the rebuild took the event at seq from the events stream. One past the replay floor was
// stored after the state stream's copy the rebuild read began: the producers' relist at every start (past the
// duplicate window) publishes each object again while the placer rebuilds, which is no news, so it is logged at
// debug (the rebuild's summary counts them). One at or below it is what the state stream lost (an unclean stop).
func (p *Placer) logCaughtUp(subject string, seq uint64) {
	level := slog.LevelInfo
	if p.replayFloor > 0 && seq > p.replayFloor {
		level = slog.LevelDebug
	}
	p.log.Log(context.Background(), level, "rebuild: the events stream holds a newer event than the state stream",
		"subject", subject, "sequence", seq)
}

// setReplayFloor makes the placer skip the events the state stream has copied when the rebuild starts
// reading it (see replayFloor): the state stream copies the events stream in order, so each of them is in the
// view the rebuild reads, or belongs to subjects the pruner removed once their object was gone. A replay of
// the events stream (a durable consumer created again delivers the whole history) would otherwise bring a
// deleted workload back until its deletion came round again, and place it for good if only its older version
// were delivered again. The server records how far each source has copied apart from the copies, which the
// pruner removes. No floor is set when that record is ahead of the events stream, as when the events stream
// was created again after the state stream.
func (p *Placer) setReplayFloor(ctx context.Context, js jetstream.JetStream, copied uint64) error {
	if copied == 0 {
		return nil
	}
	events, err := js.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	if last := events.CachedInfo().State.LastSeq; copied > last {
		p.log.Warn("rebuild: the state stream copied events the events stream never held (was it created again?); "+
			"events are judged by their subjects alone", "copied_through", copied, "events_last", last)
		return nil
	}
	p.replayFloor = copied
	return nil
}

// sourcedThrough is, per source of the state stream, the last sequence of its origin stream it has copied.
func sourcedThrough(ctx context.Context, state jetstream.Stream) (map[string]uint64, error) {
	info, err := state.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("placer rebuild: %w", err)
	}
	copied := map[string]uint64{}
	for _, s := range info.Sources {
		copied[s.Name] = s.Seq
	}
	return copied, nil
}

// readUncopied applies what the state stream's sources stored past what it had copied when the rebuild
// began, read from the origin streams themselves, and returns how many it applied. The durable consumer does
// not deliver those events again once a former placer acknowledged them, so a state stream still behind
// after waitSourced (its sourcing stalled by a server's restart or a leader's election) would otherwise leave
// the view without them until each subject changed again: a node's last report, a heartbeat, a decision.
func (p *Placer) readUncopied(ctx context.Context, js jetstream.JetStream, copied map[string]uint64) (int, error) {
	applied := 0
	for _, source := range []struct{ stream, filter string }{
		{schemas.StreamEvents, schemas.SubjectStateEvents},
		{schemas.StreamDecisions, schemas.SubjectAllDecisions},
	} {
		from, ok := copied[source.stream]
		if !ok {
			continue
		}
		err := bus.ReadMessages(ctx, js, source.stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{source.filter},
			DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: from + 1},
			func(msg jetstream.Msg, _ time.Time) {
				meta, err := msg.Metadata()
				if err != nil {
					return
				}
				if event, payload, ok := decodeMessage(msg); ok && p.rebuildFrom(msg, event, payload, meta.Sequence.Stream) {
					applied++
				}
			})
		if err != nil {
			return applied, fmt.Errorf("placer rebuild: what the state stream has not copied: %w", err)
		}
	}
	if applied > 0 {
		p.log.Info("rebuild: applied events the state stream had not copied yet", "events", applied)
	}
	return applied, nil
}

// originSequence reads the origin stream's sequence from a Nats-Stream-Source header.
func originSequence(header string) uint64 {
	fields := strings.Fields(header)
	if len(fields) < 2 {
		return 0
	}
	seq, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return seq
}

// streamHistory is the events stream's history, read through JetStream (lifecycle.History).
type streamHistory struct {
	ctx context.Context
	js  jetstream.JetStream
}

func (h streamHistory) Events(subject string, visit func(schemas.Payload)) error {
	return bus.ReadEvents(h.ctx, h.js, schemas.StreamEvents, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy},
		func(_ string, payload schemas.Payload) { visit(payload) })
}
