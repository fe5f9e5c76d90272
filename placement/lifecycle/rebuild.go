package lifecycle

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// History reads the recorded events of one subject of the events stream, oldest first. A rebuild reads it for
// what the state stream, which keeps the newest event of each subject alone, no longer holds: the last valid
// version of a refused policy or RI, the last status of a copy that went.
type History interface {
	Events(subject string, visit func(schemas.Payload)) error
}

// A rebuild brings a new controller to where a running one would be, from the state stream (the newest event of
// every subject) and the newest events of the history:
//
//  1. BeginRebuild, with the time the rebuild starts;
//  2. Restore each event read, in the order read: the view is updated, nothing is decided;
//  3. AdvanceSequence to the newest sequence of the events stream read, which new decisions are stamped with;
//  4. FinishRebuild, with the time the reading ended: each workload is put back where it was placed, with its
//     reservation while it would still hold, what changed while no controller ran is judged again, and the
//     effects of that are returned, staged as Handle's are.

// BeginRebuild starts a rebuild at now.
func (p *Controller) BeginRebuild(now time.Time) { p.rebuild.now = now }

// Restore folds one event read at a rebuild into the view without deciding anything. A decision's sequence is
// that of the decisions stream and does not move the controller's.
func (p *Controller) Restore(ev Event) error {
	if !schemas.IsDecision(ev.Subject) {
		p.at.seq = ev.Sequence
	}
	// The state stream stores its copy of an event when it copies it, which may be long after the event was
	// stored (a state stream recreated, or catching up): the event's own time, when earlier, is the closer
	// one, or every heartbeat copied lately would make its cluster Ready at restart, a dead one too.
	p.at.now, p.at.stored, p.at.eventTime = ev.Time, time.Time{}, ev.Time
	if !ev.Stored.IsZero() {
		p.at.stored = ev.Stored
		if !p.at.now.IsZero() && p.at.now.Before(p.at.stored) {
			p.at.stored = p.at.now
		}
		p.at.now = p.at.stored
	}
	_, err := p.apply(ev.Type, ev.Payload, true)
	return errors.Join(err, p.ledger.Seal())
}

// Sequence is the sequence of the last event handled or restored.
func (p *Controller) Sequence() uint64 { return p.at.seq }

// AdvanceSequence makes seq the sequence decisions made at the rebuild's end are stamped with.
func (p *Controller) AdvanceSequence(seq uint64) { p.at.seq = seq }

// FinishRebuild ends a rebuild whose reading ended at at: it puts the last valid version of refused RIs and
// policies back in force (read from history), each workload where it was placed, copies gone while no
// controller ran back on their clusters, and returns what must be published, staged until Commit or Abort (the
// slice is valid until then). A nil history holds nothing.
func (p *Controller) FinishRebuild(at time.Time, history History) ([]Effect, error) {
	p.at.now = at
	defer func() { p.rebuild.now = time.Time{} }()
	touched := newTouched()
	if err := p.recoverLastValid(history, touched); err != nil {
		return nil, fmt.Errorf("lifecycle rebuild: %w", err)
	}
	if err := p.restore(touched); err != nil {
		return nil, err
	}
	if err := p.reapplyGoneCopies(history, touched); err != nil {
		return nil, fmt.Errorf("lifecycle rebuild: %w", err)
	}
	registered := 0
	for _, c := range p.clusters {
		if c.registered {
			registered++ // not a cluster only beats were read of: its Cluster was deleted, or is not there yet
		}
	}
	p.log.Debug("rebuilt view restored", "workloads", len(p.workloads), "registered_clusters", registered, "policies", len(p.policies),
		"view_sequence", p.store.Snapshot().Index())
	// What was restored is what the streams hold: an Abort of the rebuild's effects goes back to it.
	if err := p.ledger.Seal(); err != nil {
		return nil, fmt.Errorf("lifecycle rebuild: %w", err)
	}
	p.ledger.Commit()
	return p.stage(eventKey{}, touched)
}

// lastStatusWithOne is the newest workload status on subject in history that carries a status and is of the
// workload of uid, nil when there is none.
func lastStatusWithOne(history History, subject, uid string) (*schemas.WorkloadStatus, error) {
	if history == nil {
		return nil, nil
	}
	var last *schemas.WorkloadStatus
	err := history.Events(subject, func(payload schemas.Payload) {
		if s, ok := payload.(*schemas.WorkloadStatus); ok && s.Status != nil && s.Workload.UID == uid {
			last = s
		}
	})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", subject, err)
	}
	return last, nil
}

// restoreAvoid keeps a workload off the clusters it was moved off before the restart (its pods pended or
// failed there), which its last verdict names with the Avoided code; without it, the next cycle could put it
// straight back where it could not run.
func (p *Controller) restoreAvoid(e *workloadEntry) error {
	for _, cluster := range slices.Sorted(maps.Keys(e.restore.ReasonCodes)) {
		if e.restore.ReasonCodes[cluster] != string(structs.RejectAvoided) {
			continue
		}
		why := e.restore.Reasons[cluster]
		if why == "" {
			why = "it was moved off this cluster before the placer restarted"
		}
		if err := p.avoid(e, cluster, why); err != nil {
			return err
		}
	}
	return nil
}

// restoredVerdict is what the rebuild takes as a workload's last verdict: the newest verdict read, unless
// the newest Apply read is newer. A Placed verdict rides with an Apply, and a later Apply to the same cluster
// (a new version of the workload, with the same verdict) takes its place in the state stream; that Apply
// then says where the workload is placed, and which clusters it is kept off. It returns the verdict with the
// time its stream stored it (or the Apply that carried it, or the newest Apply).
func (p *Controller) restoredVerdict(e *workloadEntry) (*schemas.PlacementVerdict, time.Time) {
	newest, apply := e.restore, e.newestApply
	if apply == nil || len(apply.clusters) == 0 || (newest != nil && newest.Sequence >= apply.sequence) {
		return newest, e.restoreAt
	}
	v := &schemas.PlacementVerdict{Workload: e.ref, Sequence: apply.sequence, Epoch: apply.epoch,
		Status: schemas.VerdictPlaced, Policy: apply.policy, Clusters: apply.clusters}
	// A Divide's shares are in the newest Apply of each of its clusters.
	for _, cluster := range apply.clusters {
		if share := p.copyOf(e.id, cluster).Published; share.Action == structs.CopyApply && share.Replicas > 0 {
			if v.Replicas == nil {
				v.Replicas = map[string]int32{}
			}
			v.Replicas[cluster] = int32(share.Replicas)
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
func (p *Controller) restore(touched *touchedSet) error {
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
		e.restore, e.restoreAt = p.restoredVerdict(e)
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
				if err := p.store.KeepOn(p.at.seq, id, kept); err != nil {
					return fmt.Errorf("lifecycle rebuild: %w", err)
				}
			}
		}
		if wl == nil || e.restore == nil || e.restore.Status != schemas.VerdictPlaced {
			continue
		}
		if err := p.restoreAvoid(e); err != nil {
			return fmt.Errorf("lifecycle rebuild: %w", err)
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
		if !e.restoreAt.IsZero() && e.restoreAt.Add(p.config.ReservationTTL).After(p.at.now) {
			recent = append(recent, restoredDecision{d: d, at: e.restoreAt, sequence: e.restore.Sequence})
		}
	}
	if len(plan.Decisions) > 0 {
		if err := p.store.ApplyPlan(p.at.seq, p.at.now, &plan); err != nil {
			return fmt.Errorf("lifecycle rebuild: restore placements: %w", err)
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
	p.relabelStaleNamespaces("", touched)
	snap = p.store.Snapshot()
	for _, id := range slices.Sorted(maps.Keys(p.workloads)) {
		e := p.workloads[id]
		touched.add(id)
		// An Apply given up on before the restart goes again to a cluster Ready now: it may have come back, or
		// gained the missing kind, while no placer ran to see it change. Under a policy that reschedules on
		// failure the workload leaves that cluster instead (leaveFailedApplies, at the first tick).
		for _, c := range p.ledger.CopiesOf(id) {
			if c.Failed.Sequence == 0 || !c.Applied() || c.Published.Sequence != c.Failed.Sequence ||
				!p.clusterReady(c.Cluster) || p.reschedulesOnFailure(id) {
				continue
			}
			p.editCopy(id, c.Cluster, func(c *structs.Copy) { c.Reapply = structs.ReapplyDue })
		}
		if e.restore != nil {
			// A verdict identical to the one published before the restart is not published again.
			p.ledger.SetVerdict(&state.Verdict{WorkloadID: id, Key: verdictKey(e.restore, analysisKey(e.restore.Analysis)),
				Unplaced: unplacedReasons(e.restore)})
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
func (p *Controller) restoreKeptReservation(e *workloadEntry, apply *appliedPlacement, kept []string) error {
	if apply == nil || apply.object == nil || !apply.at.Add(p.config.ReservationTTL).After(p.at.now) {
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
	wl, err := p.store.UpsertWorkload(p.at.seq, then)
	if err != nil {
		log.Warn("rebuild: the version a workload placed nowhere keeps running cannot be stored; it holds no room", "error", err)
		return nil
	}
	d := &structs.Decision{ID: fmt.Sprintf("kept/%s/%d", e.ref.UID, apply.sequence), WorkloadID: e.id,
		Workload: wl.DisplayName(), Generation: wl.Generation, Policy: apply.policy, Status: structs.StatusPlaced, Clusters: kept}
	for _, cluster := range kept {
		if share := p.copyOf(e.id, cluster).Published; share.Replicas > 0 {
			if d.Replicas == nil {
				d.Replicas = map[string]int64{}
			}
			d.Replicas[cluster] = share.Replicas
		}
	}
	d.SnapshotIndex = p.store.Snapshot().Index()
	if err := p.store.ApplyPlan(p.at.seq, apply.at, &structs.Plan{Decisions: []*structs.Decision{d}}); err != nil {
		return fmt.Errorf("lifecycle rebuild: restore where %s runs: %w", d.Workload, err)
	}
	if err := p.holdAgain(d, apply.at); err != nil {
		return err
	}
	if current.Analysis != nil {
		if _, err := p.store.UpsertWorkload(p.at.seq, current); err != nil {
			return fmt.Errorf("lifecycle rebuild: %w", err)
		}
	}
	nowhere := &structs.Decision{ID: d.ID + "/nowhere", WorkloadID: e.id, Workload: d.Workload, Generation: d.Generation,
		SnapshotIndex: p.store.Snapshot().Index(), Status: structs.StatusUnschedulable}
	if err := p.store.ApplyPlan(p.at.seq, apply.at, &structs.Plan{Decisions: []*structs.Decision{nowhere}}); err != nil {
		return fmt.Errorf("lifecycle rebuild: %s placed nowhere: %w", d.Workload, err)
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
func (p *Controller) restoreReservations(recent []restoredDecision) error {
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
func (p *Controller) holdAgain(d *structs.Decision, at time.Time) error {
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
	if wl, pol := snap.Workload(d.WorkloadID), snap.Policy(d.Policy); wl != nil && pol != nil {
		packed.Pin = pol.Spec.PinPods && wl.Pinnable()
	}
	err := p.store.ApplyPlan(p.at.seq, at, &structs.Plan{Decisions: []*structs.Decision{&packed}})
	if errors.Is(err, state.ErrStalePlan) {
		p.log.Warn("rebuild: a restored workload's reservation was not held again", "workload", d.Workload, "error", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("lifecycle rebuild: restore the reservation of %s: %w", d.Workload, err)
	}
	return nil
}
