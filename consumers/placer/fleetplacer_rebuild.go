package placer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
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
	if err := p.setReplayFloor(ctx, js, stream); err != nil {
		return err
	}
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
	caughtUp, err := p.catchUpFromHistory(ctx, js)
	if err != nil {
		return err
	}
	p.now = time.Now()
	touched := newTouched()
	if err := p.recoverLastValid(ctx, js, touched); err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	if err := p.restore(touched); err != nil {
		return err
	}
	if err := p.reapplyGoneCopies(ctx, lastStatusWithOne(js), touched); err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	registered := 0
	for _, c := range p.clusters {
		if c.registered {
			registered++ // not a cluster only beats were read of: its Cluster was deleted, or is not there yet
		}
	}
	p.log.Info("placer view rebuilt from the state stream", "messages", read, "newer_in_history", caughtUp, "workloads", len(p.workloads),
		"clusters", registered, "policies", len(p.policies), "view_sequence", p.store.Snapshot().Index())
	return p.reconcileAndAwait(ctx, touched)
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
	isDecision := strings.HasPrefix(msg.Subject(), schemas.SubjectDecisionsRoot+".")
	if !isDecision {
		if seq <= p.seen[msg.Subject()] {
			return false
		}
		p.markApplied(msg.Subject(), seq)
		p.seq = seq
	}
	// The state stream stores its copy of an event when it copies it, which may be long after the event was
	// stored (a state stream recreated, or catching up): the event's own time, when earlier, is the closer
	// one, or every heartbeat copied lately would make its cluster Ready at restart, a dead one too.
	p.now, p.stored, p.eventTime = event.Time(), time.Time{}, event.Time()
	if meta, err := msg.Metadata(); err == nil {
		p.stored = meta.Timestamp
		if !p.now.IsZero() && p.now.Before(p.stored) {
			p.stored = p.now
		}
		p.now = p.stored
	}
	if _, err := p.apply(event.Type(), payload, true); err != nil {
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
	last, applied := p.seq, 0
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
	p.seq = last
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
func (p *Placer) setReplayFloor(ctx context.Context, js jetstream.JetStream, state jetstream.Stream) error {
	info, err := state.Info(ctx)
	if err != nil {
		return fmt.Errorf("placer rebuild: %w", err)
	}
	var copied uint64
	for _, s := range info.Sources {
		if s.Name == schemas.StreamEvents {
			copied = s.Seq
		}
	}
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

// restoreAvoid keeps a workload off the clusters it was moved off before the restart (its pods pended or
// failed there), which its last verdict names with the Avoided code; without it, the next cycle could put it
// straight back where it could not run.
func (p *Placer) restoreAvoid(e *workloadEntry) error {
	for cluster, code := range e.restore.ReasonCodes {
		if code != string(structs.RejectAvoided) {
			continue
		}
		if e.avoid == nil {
			e.avoid = map[string]string{}
		}
		why := e.restore.Reasons[cluster]
		if why == "" {
			why = "it was moved off this cluster before the placer restarted"
		}
		e.avoid[cluster] = why
	}
	if len(e.avoid) == 0 {
		return nil
	}
	return p.upsertWorkload(e)
}

// restoredVerdict is what the rebuild takes as a workload's last verdict: the newest verdict read, unless
// the newest Apply read is newer. A Placed verdict rides with an Apply, and a later Apply to the same cluster
// (a new version of the workload, with the same verdict) takes its place in the state stream; that Apply
// then says where the workload is placed, and which clusters it is kept off. It returns the verdict with the
// time its stream stored it (or the Apply that carried it, or the newest Apply).
func (e *workloadEntry) restoredVerdict() (*schemas.PlacementVerdict, time.Time) {
	newest, apply := e.restore, e.newestApply
	if apply == nil || len(apply.clusters) == 0 || (newest != nil && newest.Sequence >= apply.sequence) {
		return newest, e.restoreAt
	}
	v := &schemas.PlacementVerdict{Workload: e.ref, Sequence: apply.sequence, Epoch: apply.epoch,
		Status: schemas.VerdictPlaced, Policy: apply.policy, Clusters: apply.clusters}
	// A Divide's shares are in the newest Apply of each of its clusters.
	for _, cluster := range apply.clusters {
		if share := e.published[cluster]; share.action == schemas.ActionApply && share.replicas > 0 {
			if v.Replicas == nil {
				v.Replicas = map[string]int32{}
			}
			v.Replicas[cluster] = int32(share.replicas)
		}
	}
	for cluster, why := range apply.avoid {
		if v.Reasons == nil {
			v.Reasons, v.ReasonCodes = map[string]string{}, map[string]string{}
		}
		v.Reasons[cluster], v.ReasonCodes[cluster] = why, string(structs.RejectAvoided)
	}
	if newest != nil {
		v.Analysis = newest.Analysis
	}
	return v, apply.at
}

// restore puts each workload back where its last verdict placed it, with its reservation while it would still
// hold (restoreReservations), recomputes cluster readiness, and schedules workloads that were never decided.
func (p *Placer) restore(touched *touchedSet) error {
	for _, name := range slices.Sorted(maps.Keys(p.clusters)) {
		c := p.clusters[name]
		c.ready = c.registered && p.fresh(c)
		if c.ready {
			p.log.Info("cluster Ready", "cluster", name)
		}
		if err := p.syncCluster(c); err != nil {
			return err
		}
	}
	snap := p.store.Snapshot()
	var plan structs.Plan
	var recent []restoredDecision
	for _, id := range slices.Sorted(maps.Keys(p.workloads)) {
		e := p.workloads[id]
		e.restore, e.restoreAt = e.restoredVerdict()
		apply := e.newestApply
		e.newestApply = nil
		wl := snap.Workload(id)
		// An Invalid workload is in the store only with a version read before its edit, but the copy it keeps
		// running holds room all the same (restoreKeptReservation stores the version applied).
		if (wl != nil || e.analysisErr != "") && !e.deleted && (e.restore == nil || e.restore.Status != schemas.VerdictPlaced) {
			// Placed nowhere, its copies still run where it was applied: its own room there, as a running placer
			// keeps it (structs.Workload.Kept).
			if kept := p.runsOn(e); len(kept) > 0 {
				if err := p.restoreKeptReservation(e, apply, kept); err != nil {
					return err
				}
				if p.store.Snapshot().Workload(id) == nil {
					continue // Invalid, and no version of it stored: nothing to keep
				}
				if err := p.store.KeepOn(p.seq, id, kept); err != nil {
					return fmt.Errorf("placer rebuild: %w", err)
				}
			}
		}
		if wl == nil || e.restore == nil || e.restore.Status != schemas.VerdictPlaced {
			continue
		}
		if err := p.restoreAvoid(e); err != nil {
			return fmt.Errorf("placer rebuild: %w", err)
		}
		d := &structs.Decision{ID: fmt.Sprintf("restored/%s/%d", e.ref.UID, e.restore.Sequence), WorkloadID: id,
			Workload: wl.DisplayName(), Generation: wl.Generation, SnapshotIndex: snap.Index(),
			Policy: e.restore.Policy, Status: structs.StatusPlaced, Clusters: e.restore.Clusters}
		if len(e.restore.Replicas) > 0 {
			d.Replicas = map[string]int64{}
			for c, n := range e.restore.Replicas {
				d.Replicas[c] = int64(n)
			}
		}
		plan.Decisions = append(plan.Decisions, d)
		if !e.restoreAt.IsZero() && e.restoreAt.Add(p.config.ReservationTTL).After(p.now) {
			recent = append(recent, restoredDecision{d: d, at: e.restoreAt, sequence: e.restore.Sequence})
		}
	}
	if len(plan.Decisions) > 0 {
		if err := p.store.ApplyPlan(p.seq, p.now, &plan); err != nil {
			return fmt.Errorf("placer rebuild: restore placements: %w", err)
		}
	}
	if err := p.restoreReservations(recent); err != nil {
		return err
	}
	// What changed while no placer ran was only read into the view: a policy, a cluster's labels, taints or
	// APIs, a namespace's labels, a cluster gone silent. Every placed workload is judged again now, as the
	// change would have had it judged had a placer been running: those that no longer belong where they run
	// move (a silent cluster's fail over), a Duplicate spreads to a cluster that joined; the rest produce
	// nothing.
	if err := p.reevaluate(scheduler.AffectedByPolicy(p.store.Snapshot()), touched); err != nil {
		return err
	}
	p.relabelChangedNamespaces(touched)
	snap = p.store.Snapshot()
	for _, id := range slices.Sorted(maps.Keys(p.workloads)) {
		e := p.workloads[id]
		touched.add(id)
		// An Apply given up on before the restart goes again to a cluster Ready now: it may have come back, or
		// gained the missing kind, while no placer ran to see it change. Under a policy that reschedules on
		// failure the workload leaves that cluster instead (leaveFailedApplies, at the first tick).
		for cluster, failed := range e.applyFailed {
			last := e.published[cluster]
			if last.action != schemas.ActionApply || last.sequence != failed.sequence || !p.clusterReady(cluster) ||
				p.reschedulesOnFailure(id) {
				continue
			}
			if e.reapply == nil {
				e.reapply = map[string]bool{}
			}
			e.reapply[cluster] = true
		}
		if e.restore != nil {
			// A verdict identical to the one published before the restart is not published again.
			e.lastVerdict = verdictKey(e.restore, analysisKey(e.restore.Analysis))
		}
		if wl := snap.Workload(id); wl != nil && wl.Placement == nil && !e.deleted && e.analysisErr == "" {
			if err := p.process(id, touched); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreKeptReservation gives a workload placed nowhere now (an edit no cluster fits, or its RI cannot read) the
// reservation of the copy it keeps running, when the Apply of that copy was stored less than a TTL ago: a running
// placer keeps it until the copy's pods are reported, the TTL passes or the copy goes, and a workload placed after
// the restart would otherwise take the room of pods still coming. The reservation is that of the version applied
// (the Apply's object), packed again where it runs, and expires when the one made before the restart would have.
// The store is brought there as a running placer brought it: that version placed on the clusters it runs on, then
// the current version placed nowhere, which keeps the reservation (Kept).
func (p *Placer) restoreKeptReservation(e *workloadEntry, apply *appliedPlacement, kept []string) error {
	if apply == nil || apply.object == nil || !apply.at.Add(p.config.ReservationTTL).After(p.now) {
		return nil
	}
	log := p.log.With("workload", e.ref.Key(), "clusters", kept)
	analysis, err := p.analyze(apply.object)
	if err != nil {
		log.Debug("rebuild: the version a workload placed nowhere keeps running cannot be analyzed; it holds no room", "error", err)
		return nil
	}
	current := p.workloadInfo(e)
	then := current
	then.Analysis = analysis
	wl, err := p.store.UpsertWorkload(p.seq, then)
	if err != nil {
		log.Warn("rebuild: the version a workload placed nowhere keeps running cannot be stored; it holds no room", "error", err)
		return nil
	}
	d := &structs.Decision{ID: fmt.Sprintf("kept/%s/%d", e.ref.UID, apply.sequence), WorkloadID: e.id,
		Workload: wl.DisplayName(), Generation: wl.Generation, Policy: apply.policy, Status: structs.StatusPlaced, Clusters: kept}
	for _, cluster := range kept {
		if share := e.published[cluster]; share.replicas > 0 {
			if d.Replicas == nil {
				d.Replicas = map[string]int64{}
			}
			d.Replicas[cluster] = share.replicas
		}
	}
	d.SnapshotIndex = p.store.Snapshot().Index()
	if err := p.store.ApplyPlan(p.seq, apply.at, &structs.Plan{Decisions: []*structs.Decision{d}}); err != nil {
		return fmt.Errorf("placer rebuild: restore where %s runs: %w", d.Workload, err)
	}
	if err := p.holdAgain(d, apply.at); err != nil {
		return err
	}
	if current.Analysis != nil {
		if _, err := p.store.UpsertWorkload(p.seq, current); err != nil {
			return fmt.Errorf("placer rebuild: %w", err)
		}
	}
	nowhere := &structs.Decision{ID: d.ID + "/nowhere", WorkloadID: e.id, Workload: d.Workload, Generation: d.Generation,
		SnapshotIndex: p.store.Snapshot().Index(), Status: structs.StatusUnschedulable}
	if err := p.store.ApplyPlan(p.seq, apply.at, &structs.Plan{Decisions: []*structs.Decision{nowhere}}); err != nil {
		return fmt.Errorf("placer rebuild: %s placed nowhere: %w", d.Workload, err)
	}
	return nil
}

// restoredDecision is a restored placement whose reservation would still hold had the placer not restarted: its
// verdict was stored at at, less than the reservation TTL ago.
type restoredDecision struct {
	d        *structs.Decision
	at       time.Time
	sequence uint64
}

// restoreReservations gives the restored placements in recent their reservations back: a placement restored from
// a verdict holds none, so until its clusters report its pods (a gang kept Pending never does) their room would
// count as free, and a workload placed after the restart could take it. Each is packed again where it is placed
// (scheduler.Repack), in the order they were decided, each on a view holding the reservations of those before
// it, and the reservation expires when the one made before the restart would have: at its verdict's storing
// plus the TTL. One that no longer fits a cluster it is placed on stays placed there, with no reservation there.
// Only placements decided within a TTL of the restart pay for it, one store write each.
func (p *Placer) restoreReservations(recent []restoredDecision) error {
	slices.SortFunc(recent, func(a, b restoredDecision) int {
		return cmp.Or(cmp.Compare(a.sequence, b.sequence), strings.Compare(a.d.WorkloadID, b.d.WorkloadID))
	})
	for _, r := range recent {
		if err := p.holdAgain(r.d, r.at); err != nil {
			return err
		}
	}
	return nil
}

// holdAgain packs the restored placement d again where it is placed (scheduler.Repack: what its pods there already
// request is its own room) and holds the room of the pods not reported yet as its reservation, expiring as one
// made at at would. Where it no longer fits it stays placed and holds no room.
func (p *Placer) holdAgain(d *structs.Decision, at time.Time) error {
	snap := p.store.Snapshot()
	assignments, unfit := scheduler.Repack(snap, d.WorkloadID)
	for _, cluster := range slices.Sorted(maps.Keys(unfit)) {
		p.log.Info("rebuild: a restored workload no longer fits where it is placed; it stays there and holds no room",
			"workload", d.Workload, "cluster", cluster, "reason", unfit[cluster])
	}
	if len(assignments) == 0 {
		return nil
	}
	packed := *d
	packed.SnapshotIndex, packed.Assignments = snap.Index(), assignments
	err := p.store.ApplyPlan(p.seq, at, &structs.Plan{Decisions: []*structs.Decision{&packed}})
	if errors.Is(err, state.ErrStalePlan) {
		p.log.Warn("rebuild: a restored workload's reservation was not held again", "workload", d.Workload, "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("placer rebuild: restore the reservation of %s: %w", d.Workload, err)
	}
	return nil
}

// relabelChangedNamespaces has the labels of namespaces relabelled while no placer ran reach the clusters where
// the newest Apply into them (whose labels the applier gave the namespace last) carried others, as
// relabelNamespace would have had a placer been running.
func (p *Placer) relabelChangedNamespaces(touched *touchedSet) {
	type newest struct {
		sequence uint64
		labels   string
	}
	last := map[[2]string]newest{} // namespace, cluster
	for _, e := range p.workloads {
		if e.ref.Namespace == "" {
			continue
		}
		for cluster, prev := range e.published {
			key := [2]string{e.ref.Namespace, cluster}
			if prev.action == schemas.ActionApply && prev.sequence > last[key].sequence {
				last[key] = newest{sequence: prev.sequence, labels: prev.namespaceLabels}
			}
		}
	}
	snap := p.store.Snapshot()
	stale := map[string]map[string]bool{} // namespace → clusters
	for _, key := range slices.SortedFunc(maps.Keys(last), func(a, b [2]string) int {
		return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1])
	}) {
		namespace, cluster := key[0], key[1]
		if last[key].labels == namespaceLabelsKey(propagatedNamespaceLabels(snap.Namespace(namespace))) {
			continue
		}
		if stale[namespace] == nil {
			stale[namespace] = map[string]bool{}
		}
		stale[namespace][cluster] = true
	}
	if len(stale) == 0 {
		return
	}
	byNamespace := p.workloadsByNamespace()
	for _, namespace := range slices.Sorted(maps.Keys(stale)) {
		clusters := stale[namespace]
		p.relabelNamespaceOn(byNamespace[namespace], func(cluster string) bool { return clusters[cluster] }, touched)
	}
}

// lastStatusWithOne returns the newest workload status on subject in the events stream's history that carries
// a status and is of the workload of uid, nil when there is none.
func lastStatusWithOne(js jetstream.JetStream) func(ctx context.Context, subject, uid string) (*schemas.WorkloadStatus, error) {
	return func(ctx context.Context, subject, uid string) (*schemas.WorkloadStatus, error) {
		var last *schemas.WorkloadStatus
		err := bus.ReadEvents(ctx, js, schemas.StreamEvents, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy},
			func(_ string, payload schemas.Payload) {
				if s, ok := payload.(*schemas.WorkloadStatus); ok && s.Status != nil && s.Workload.UID == uid {
					last = s
				}
			})
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", subject, err)
		}
		return last, nil
	}
}
