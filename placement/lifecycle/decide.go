package lifecycle

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/internal/jsondec"
	"github.com/fleetflow/fleetflow/internal/jsonenc"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// planner records plans in the store under the sequence of the event being handled.
func (p *Controller) planner() scheduler.Planner {
	return &storePlanner{p: p}
}

type storePlanner struct{ p *Controller }

func (s *storePlanner) SubmitPlan(plan *structs.Plan) (scheduler.State, error) {
	err := s.p.store.ApplyPlan(s.p.at.seq, s.p.at.now, plan)
	return s.p.store.Snapshot(), err
}

// process runs a placement cycle for one workload.
func (p *Controller) process(id string, touched *touchedSet) error {
	plan, _, err := p.sched.Process(p.store.Snapshot(), p.planner(), id)
	if err != nil {
		return err
	}
	for _, d := range plan.Decisions {
		p.record(d, touched)
	}
	return nil
}

// reevaluate runs cycles for placed workloads and records the ones that move. A workload whose copies all
// completed is left where it is: moved, a job that already ran would run again, and its result would give way
// to a new copy's empty status. A failed one is re-evaluated as any other: Failed is also a service whose
// rollout stalled, which should fail over.
func (p *Controller) reevaluate(ids []string, touched *touchedSet) error {
	return p.reevaluateAll(slices.DeleteFunc(slices.Clone(ids), p.completedEverywhere), touched)
}

// reevaluateAll is reevaluate for completed workloads too: those on a cluster that left the fleet, whose copy
// there is deleted with the cluster's results, go elsewhere as any other.
func (p *Controller) reevaluateAll(ids []string, touched *touchedSet) error {
	if len(ids) == 0 {
		return nil
	}
	moves, widenable, err := p.sched.Reevaluate(p.store.Snapshot(), p.planner(), ids)
	for _, d := range moves {
		p.record(d, touched)
	}
	for _, d := range widenable {
		p.blocked.Record(d)
	}
	return err
}

// wake retries the blocked workloads that ev could unblock, and re-evaluates the placed ones it could widen.
func (p *Controller) wake(ev scheduler.Event, touched *touchedSet) {
	var widen []string
	for _, id := range p.blocked.Wake(ev) {
		if wl := p.store.Snapshot().Workload(id); wl != nil && wl.Placement != nil {
			widen = append(widen, id)
			continue
		}
		if err := p.process(id, touched); err != nil {
			p.log.Warn("retrying blocked workload failed", "workload", id, "error", err)
		}
	}
	if err := p.reevaluate(widen, touched); err != nil {
		p.log.Warn("widening placed workloads failed", "workloads", widen, "error", err)
	}
}

// completedEverywhere reports whether workload id is placed, not by a Duplicate spread (whose copies follow the
// fleet whatever they did), and its copy on every cluster it is placed on last reported Completed.
func (p *Controller) completedEverywhere(id string) bool {
	if p.workloads[id] == nil {
		return false
	}
	wl := p.store.Snapshot().Workload(id)
	if wl == nil || wl.Placement == nil || len(wl.Placement.Clusters) == 0 {
		return false
	}
	if pe := p.policies[wl.Placement.Policy]; pe != nil && pe.compiled != nil && pe.compiled.Spec.SpreadConstraints != nil &&
		pe.compiled.Spec.SpreadConstraints.SpreadMode == v1alpha1.SpreadModeDuplicate {
		return false
	}
	for _, c := range wl.Placement.Clusters {
		if !p.copyOf(id, c).Completed {
			return false
		}
	}
	return true
}

func (p *Controller) record(d *structs.Decision, touched *touchedSet) {
	touched.decided(d)
	p.blocked.Record(d)
	switch d.Status {
	case structs.StatusPlaced:
		p.placedBack(d)
	case structs.StatusUnschedulable, structs.StatusNoPolicy:
		p.keepWhereItRuns(d.WorkloadID)
	}
}

// runsOn lists, by name, the registered clusters where the Apply of a copy of workload e stands: where its copies
// run, the ones it is leaving included.
func (p *Controller) runsOn(e *workloadEntry) []string {
	var clusters []string
	for _, c := range p.publishedOn(e.id) {
		if prev := c.Published; prev.Action == structs.CopyApply && (prev.UID == "" || prev.UID == e.ref.UID) &&
			p.clusterRegistered(c.Cluster) {
			clusters = append(clusters, c.Cluster)
		}
	}
	return clusters
}

// keepWhereItRuns records, for a workload placed nowhere now, every cluster where its copies run as where it is
// kept (structs.Workload.Kept): the store takes them from its last placement, which leaves out a cluster it was
// leaving (the Delete waits for the new copy), whose copy runs on all the same; a restarted placer finds both
// from the Applies it published (restore), and judges it as this one does.
func (p *Controller) keepWhereItRuns(id string) {
	e := p.workloads[id]
	if e == nil || e.deleted {
		return
	}
	wl := p.store.Snapshot().Workload(id)
	if wl == nil || wl.Placement != nil {
		return
	}
	kept := p.runsOn(e)
	if slices.Equal(kept, wl.Kept) {
		return
	}
	if err := p.store.KeepOn(p.at.seq, id, kept); err != nil {
		p.log.Warn("could not record where a workload placed nowhere still runs", "workload", e.ref.Key(),
			"clusters", kept, "error", err)
	}
}

// placedBack forgets that a workload placed again on a cluster it was moved off earlier (no other cluster took
// it) keeps off that cluster: it runs there now, so it stays while it fits, and pods pending there, a failure
// or a refused Apply move it off again. Kept avoided, the cluster would have it leave at its next
// re-evaluation, and its pods pending there would never move it.
func (p *Controller) placedBack(d *structs.Decision) {
	e := p.workloads[d.WorkloadID]
	if e == nil {
		return
	}
	for _, cluster := range d.Clusters {
		if err := p.avoid(e, cluster, ""); err != nil {
			p.log.Warn("could not record that a workload no longer keeps off a cluster", "workload", e.ref.Key(),
				"cluster", cluster, "error", err)
		}
	}
}

// reconcile publishes what an event changed: verdicts (with the analysis each answers), then per-cluster
// decisions derived by comparing where each touched workload should be with what was already published.
func (p *Controller) reconcile(touched *touchedSet) error {
	for _, id := range slices.Sorted(maps.Keys(touched.invalid)) {
		e := p.workloads[id]
		message := touched.invalid[id]
		// An edit the RI cannot read is not carried out: the copy of the version before keeps running.
		note, err := p.stillRunning(e, "once it can be analyzed")
		if err != nil {
			return err
		}
		if note != "" {
			message += "; " + note
		}
		v := &schemas.PlacementVerdict{Workload: e.ref, Sequence: p.at.seq, Status: schemas.VerdictInvalid,
			Message: message, ViewSequence: p.store.Snapshot().Index(), Analysis: e.verdictAnalysis}
		if err := p.publishVerdict(e, v); err != nil {
			return err
		}
	}
	// A new Placed verdict waits for the workload's decisions: it rides with the first Apply among them, and
	// is sent on its own only when there is none (the workload stays where it runs, with new reasons).
	held := map[string]*heldVerdict{}
	for _, id := range slices.Sorted(maps.Keys(touched.verdicts)) {
		e := p.workloads[id]
		if e == nil {
			continue
		}
		v := verdictOf(e.ref, p.at.seq, touched.verdicts[id])
		v.Analysis = e.verdictAnalysis
		if v.Status == schemas.VerdictPlaced {
			if key := verdictKey(v, e.verdictAnalysisKey); key != p.ledger.Verdict(id) {
				held[id] = &heldVerdict{v: v, key: key}
			}
			continue
		}
		note, err := p.stillRunning(e, "once a cluster fits it")
		if err != nil {
			return err
		}
		if note != "" {
			v.Message = strings.TrimPrefix(v.Message+"; "+note, "; ")
		}
		if err := p.publishVerdict(e, v); err != nil {
			return err
		}
	}
	snap := p.store.Snapshot()
	for _, id := range slices.Sorted(maps.Keys(touched.ids)) {
		e := p.workloads[id]
		if e == nil {
			continue
		}
		if err := p.publishDecisions(e, snap.Workload(id), held[id]); err != nil {
			return err
		}
		// A workload deleted on the control plane goes once no copy of it is left to delete; so does one
		// known only from decisions, which a rebuild finds when a prune of the state stream was cut short.
		if (e.deleted || e.objectJSON == nil) && len(p.publishedOn(id)) == 0 {
			p.forget(e)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(held)) {
		if h := held[id]; !h.carried {
			if err := p.sendVerdict(p.workloads[id], h.v, h.key); err != nil {
				return err
			}
		}
	}
	return nil
}

// heldVerdict is a new Placed verdict waiting to ride with its workload's first Apply.
type heldVerdict struct {
	v   *schemas.PlacementVerdict
	key string
	// carried is set once an Apply carries it.
	carried bool
}

func verdictOf(ref schemas.ObjectRef, seq uint64, d *structs.Decision) *schemas.PlacementVerdict {
	v := &schemas.PlacementVerdict{Workload: ref, Sequence: seq, Policy: d.Policy, Clusters: d.Clusters,
		Reasons: d.Reasons, Message: d.Message, ViewSequence: d.SnapshotIndex}
	switch d.Status {
	case structs.StatusPlaced:
		v.Status = schemas.VerdictPlaced
	case structs.StatusNoPolicy:
		v.Status = schemas.VerdictNoPolicy
	default:
		v.Status = schemas.VerdictUnschedulable
	}
	if len(d.RejectCodes) > 0 {
		v.ReasonCodes = make(map[string]string, len(d.RejectCodes))
		for c, code := range d.RejectCodes {
			v.ReasonCodes[c] = string(code)
		}
	}
	if len(d.Replicas) > 0 {
		v.Replicas = map[string]int32{}
		for c, n := range d.Replicas {
			v.Replicas[c] = int32(n)
		}
	}
	return v
}

// verdictKey identifies what a verdict says, leaving out when it was said and the amounts in its reasons:
// a blocked workload retried as capacity trickles in keeps the same verdict until a cluster is rejected
// for another kind of reason, so the streams and the control plane are not flooded with new free amounts.
// A new analysis (the workload asks for something else, analysisKey) makes a new verdict.
func verdictKey(v *schemas.PlacementVerdict, analysisKey string) string {
	reasons := v.ReasonCodes
	if len(reasons) == 0 {
		reasons = v.Reasons
	}
	// Fields end with a 0 byte, which Kubernetes names, reason texts and codes never contain, so the
	// concatenation reads back one way only.
	var d xxhash.Digest
	d.Reset()
	field := func(s string) {
		_, _ = d.WriteString(s)
		_, _ = d.Write(fieldEnd)
	}
	field(string(v.Status))
	field(v.Policy)
	field(v.Message)
	field(analysisKey)
	for _, c := range v.Clusters {
		field(c)
	}
	field("replicas")
	for _, c := range slices.Sorted(maps.Keys(v.Replicas)) {
		field(c)
		field(strconv.Itoa(int(v.Replicas[c])))
	}
	// A reason per rejected cluster, tens of them: summed, they need no sorting, and each cluster is bound
	// to its own reason.
	var reasonsSum uint64
	for c, r := range reasons {
		reasonsSum += fmix64(xxhash.Sum64String(c)*0x9e3779b97f4a7c15 + xxhash.Sum64String(r))
	}
	field("reasons")
	var sum [8]byte
	binary.LittleEndian.PutUint64(sum[:], reasonsSum)
	_, _ = d.Write(sum[:])
	return strconv.FormatUint(d.Sum64(), 16)
}

var fieldEnd = []byte{0}

// fmix64 is MurmurHash3's finalizer: every input bit affects every output bit, so a sum of mixed values does
// not let two changes cancel out the way a sum of raw hashes could.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	return h ^ h>>33
}

// analysisKey identifies an analysis for verdictKey.
func analysisKey(a *schemas.Analysis) string {
	if a == nil {
		return ""
	}
	data, err := a.AppendJSON(nil)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(xxhash.Sum64(data), 16)
}

// publishVerdict sends a verdict as an event of its own, unless it says nothing new.
func (p *Controller) publishVerdict(e *workloadEntry, v *schemas.PlacementVerdict) error {
	key := verdictKey(v, e.verdictAnalysisKey)
	if key == p.ledger.Verdict(e.id) {
		return nil // nothing new to say: e.g. a blocked workload retried and still blocked
	}
	return p.sendVerdict(e, v, key)
}

// sendVerdict sends v, whose verdictKey is key, as an event of its own.
func (p *Controller) sendVerdict(e *workloadEntry, v *schemas.PlacementVerdict, key string) error {
	v.Epoch = p.epoch
	subject := schemas.VerdictSubject(e.ref)
	if err := p.send(schemas.TypePlacementVerdict, subject, fmt.Sprintf("verdict/%s/%d", e.ref.UID, p.at.seq), v); err != nil {
		return err
	}
	p.verdictSaid(e, v, key)
	return nil
}

// verdictSaid records that v was published, on its own or with an Apply.
func (p *Controller) verdictSaid(e *workloadEntry, v *schemas.PlacementVerdict, key string) {
	p.ledger.SetVerdict(&state.Verdict{WorkloadID: e.id, Key: key, Unplaced: unplacedReasons(v)})
	p.log.Info("verdict", "workload", e.ref.Key(), "status", v.Status, "clusters", v.Clusters, "policy", v.Policy,
		"reasons", v.Reasons, "message", v.Message)
}

// unplacedReasons is why v does not place its workload (state.Verdict.Unplaced): for an Unschedulable verdict
// the distinct reason codes of its clusters, or Unknown when it names none, and for a NoPolicy or Invalid one
// its status; nil for a Placed one.
func unplacedReasons(v *schemas.PlacementVerdict) []string {
	switch {
	case v.Status == schemas.VerdictPlaced:
		return nil
	case v.Status != schemas.VerdictUnschedulable:
		return []string{string(v.Status)}
	case len(v.ReasonCodes) == 0:
		return []string{"Unknown"}
	}
	return slices.Compact(slices.Sorted(maps.Values(v.ReasonCodes)))
}

// setAnalysis records a workload's new analysis, or why there is none, and what its verdicts carry of it.
func (e *workloadEntry) setAnalysis(a *karta.Analysis, analysisErr string) {
	e.analysis, e.analysisErr = a, analysisErr
	out := &schemas.Analysis{Error: analysisErr}
	if a != nil {
		out.ResourceInterface, out.TotalPods, out.TotalRequests = a.ResourceInterface, a.TotalPods, a.TotalRequests
		for _, c := range a.Components {
			out.Components = append(out.Components, schemas.AnalyzedComponent{Name: c.Name, Instance: c.Instance,
				Pods: c.Pods, PodRequests: c.PodRequests})
		}
	}
	e.verdictAnalysis, e.verdictAnalysisKey = out, analysisKey(out)
}

// stillRunning says where a workload no cluster takes now still runs, and whether that copy is of an earlier
// version, which stays until this one can be applied (until says when): "" when it runs nowhere. Without it, a
// user whose edit made a running workload Unschedulable or Invalid would not know the edit is not carried out.
func (p *Controller) stillRunning(e *workloadEntry, until string) (string, error) {
	if e.deleted || e.objectJSON == nil {
		return "", nil
	}
	var clusters []string
	earlier := false
	for _, c := range p.publishedOn(e.id) {
		cluster, prev := c.Cluster, c.Published
		if prev.Action != structs.CopyApply || !p.clusterRegistered(cluster) || prev.UID != "" && prev.UID != e.ref.UID {
			continue // an earlier workload's copy of this name is not this one's
		}
		if c.Failed.Sequence != 0 && c.Failed.Sequence == prev.Sequence && c.Confirmed == 0 {
			continue // the cluster refused its only Apply there: no copy of it runs there
		}
		clusters = append(clusters, cluster)
		same, err := p.appliedNow(e, c)
		if err != nil {
			return "", err
		}
		earlier = earlier || !same
	}
	if len(clusters) == 0 {
		return "", nil
	}
	note := "the copy on " + strings.Join(clusters, ", ") + " keeps running"
	if earlier {
		note += " the version applied before; this version is applied " + until
	}
	return note, nil
}

// publishDecisions makes the published decisions of one workload match its placement in the store: an
// Apply for every cluster that should run the current version, and a Delete for every cluster that runs
// it but should not. On a move, deletes wait until the new clusters confirmed their applies, so the
// workload is never nowhere; a workload that fits nowhere stays where it runs.
func (p *Controller) publishDecisions(e *workloadEntry, wl *structs.Workload, verdict *heldVerdict) error {
	desired := map[string]int64{}
	if wl != nil && wl.Placement != nil && !e.deleted && e.objectJSON != nil {
		for _, c := range wl.Placement.Clusters {
			if p.clusterRegistered(c) { // a cluster that left the fleet gets the Delete of its copy below
				desired[c] = wl.Placement.Replicas[c]
			}
		}
	}
	if len(desired) == 0 && !e.deleted && e.objectJSON != nil {
		// The workload fits nowhere now (or no policy takes it): what already runs keeps running, as the
		// verdict on the control plane says, until a cluster fits again. Taking it down would turn a
		// transient answer (clusters relabelled one by one, a grown spec) into lost work. Not on a cluster
		// whose Cluster object was deleted: fleetflow no longer manages it, and its copy would run unseen. Nor
		// the copy of an earlier workload of this name (publishedDecision.uid): that one was deleted.
		for _, c := range p.publishedOn(e.id) {
			cluster, prev := c.Cluster, c.Published
			if prev.Action != structs.CopyApply {
				continue
			}
			if earlier := prev.UID != "" && prev.UID != e.ref.UID; p.clusterRegistered(cluster) &&
				(!earlier || c.Redelete && !p.clusterReady(cluster)) {
				continue
			}
			if err := p.decide(e, cluster, schemas.ActionDelete, nil, copyShape{}, nil, nil); err != nil {
				return err
			}
			p.editCopy(e.id, cluster, deleteSent)
			if err := p.notKeptOn(e.id, cluster); err != nil {
				return err
			}
		}
		return nil
	}
	// An edit its RI cannot read is not carried out, as its Invalid verdict says: the copy keeps the version applied
	// before. No Apply goes, not even one sent again (the namespace's new labels, a cluster back, a failed Apply
	// retried), which would carry this version; it goes once the workload can be analyzed again.
	applyTo := desired
	if e.analysisErr != "" {
		applyTo = nil
	}
	for _, cluster := range slices.Sorted(maps.Keys(applyTo)) {
		replicas, pins := desired[cluster], p.copyPins(wl, cluster)
		// New pins alone (the workload packed again where it runs) go as a new Apply too: pods not created yet
		// are pinned by them; so does a policy that starts or stops pinning pods.
		if c := p.copyOf(e.id, cluster); c.Published.Action == structs.CopyApply && c.Published.Replicas == replicas &&
			samePins(pins, c.Published.Pins) &&
			!p.reapplyDue(&c) && (c.Published.UID == "" || c.Published.UID == e.ref.UID) {
			same, err := p.appliedNow(e, &c)
			if err != nil {
				return err
			}
			if same {
				continue
			}
		}
		object, err := p.desiredObject(e, wl, replicas, pins != "")
		if err != nil {
			return err
		}
		var carry *heldVerdict
		if verdict != nil && !verdict.carried && slices.Contains(verdict.v.Clusters, cluster) {
			carry = verdict
		}
		if err := p.decide(e, cluster, schemas.ActionApply, object, copyShape{replicas: replicas, pins: pins}, wl, carry); err != nil {
			return err
		}
	}
	settled := true
	for cluster := range desired {
		if c := p.copyOf(e.id, cluster); c.Confirmed < c.Published.Sequence {
			settled = false
		}
	}
	for _, c := range p.publishedOn(e.id) {
		cluster := c.Cluster
		if _, keep := desired[cluster]; keep || c.Published.Action != structs.CopyApply {
			continue
		}
		if !settled && len(desired) > 0 && p.clusterReady(cluster) {
			continue // delete after the new clusters confirmed, unless the old one is gone anyway
		}
		if c.Redelete && !p.clusterReady(cluster) {
			continue // its applier already gave up once; send it again when the cluster is back
		}
		if err := p.decide(e, cluster, schemas.ActionDelete, nil, copyShape{}, nil, nil); err != nil {
			return err
		}
		p.editCopy(e.id, cluster, deleteSent)
	}
	if e.deleted || len(desired) == 0 {
		for _, c := range p.publishedOn(e.id) {
			if c.Published.Action == structs.CopyDelete {
				p.editCopy(e.id, c.Cluster, func(c *structs.Copy) { c.Published = structs.Published{} })
			}
		}
	}
	return nil
}

// deleteSent forgets what a copy reported once its Delete is sent: a copy applied there later is a new one.
func deleteSent(c *structs.Copy) {
	c.Redelete, c.Finished, c.Completed = false, false, false
}

// clusterRegistered reports whether the control plane has a Cluster object for the cluster.
func (p *Controller) clusterRegistered(name string) bool {
	c := p.clusters[name]
	return c != nil && c.registered
}

func (p *Controller) clusterReady(name string) bool {
	c := p.clusters[name]
	return c != nil && c.ready
}

// copyShape is how an Apply's copy differs from the control-plane object: its share of replicas under a
// Divide (0 when not divided), and the pins of its pods there (schemas.Pins encoded, "" when not pinned).
type copyShape struct {
	replicas int64
	pins     string
}

// desiredObject is the control-plane object to apply, encoded, with the cluster's share of replicas for a
// Divide, and its pod templates gated for the pinner when pinned.
func (p *Controller) desiredObject(e *workloadEntry, wl *structs.Workload, replicas int64, pinned bool) ([]byte, error) {
	if (replicas == 0 && !pinned) || wl == nil {
		return e.objectJSON, nil
	}
	obj, err := e.object()
	if err != nil {
		return nil, err
	}
	if replicas > 0 {
		i := slices.IndexFunc(wl.PodGroups, func(g structs.PodGroup) bool { return g.Scalable && len(g.ReplicasFieldPath) > 0 })
		if i < 0 {
			return nil, fmt.Errorf("%s: divided into %d replicas, but no component has a plain replicas path", e.ref, replicas)
		}
		path := wl.PodGroups[i].ReplicasFieldPath
		if err := unstructured.SetNestedField(obj, replicas, path...); err != nil {
			return nil, fmt.Errorf("set %v of %s: %w", path, e.ref, err)
		}
	}
	if pinned {
		if err := pinTemplates(obj, e.ref, wl); err != nil {
			return nil, err
		}
	}
	encoded, err := jsonenc.Append(nil, obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", e.ref, err)
	}
	return encoded, nil
}

// decide publishes one decision and records it. An Apply applies the workload's current object, as
// objectJSON encodes it with the cluster's share of replicas, says where wl is placed, and carries verdict
// when one is given.
func (p *Controller) decide(e *workloadEntry, cluster string, action schemas.DecisionAction,
	objectJSON []byte, shape copyShape, wl *structs.Workload, verdict *heldVerdict) error {
	replicas := shape.replicas
	ref, earlier := e.ref, false
	if prev := p.copyOf(e.id, cluster).Published; action == schemas.ActionDelete && prev.UID != "" && prev.UID != ref.UID {
		// The copy there is an earlier workload's of this name: the applier deletes it only by its own uid.
		ref.UID, earlier = prev.UID, true
	}
	d := &schemas.PlacementDecided{
		DecisionID: fmt.Sprintf("%s/%d/%s/%s", ref.UID, p.at.seq, action, cluster),
		Workload:   ref, Cluster: cluster, Action: action, Sequence: p.at.seq, Epoch: p.epoch, ObjectJSON: objectJSON,
		Replicas: replicas, Pins: shape.pins,
	}
	policyName := ""
	if action == schemas.ActionApply {
		policyName = wl.Placement.Policy
		d.Policy, d.Clusters, d.Avoid = policyName, wl.Placement.Clusters, wl.Avoid
		if e.ref.Namespace != "" {
			d.NamespaceLabels = propagatedNamespaceLabels(p.store.Snapshot().Namespace(e.ref.Namespace))
		}
		if replicas > 0 || shape.pins != "" {
			// A share or a gated copy is not the control-plane object: the copy says which object it was cut from.
			content, err := e.contentKey()
			if err != nil {
				return err
			}
			d.SourceContent = content
		}
	}
	if verdict != nil {
		verdict.v.Epoch = p.epoch
		d.Verdict = verdict.v
	}
	switch {
	case action == schemas.ActionDelete && (e.deleted || earlier):
		d.Reason = "workload deleted on the control plane"
	case action == schemas.ActionDelete:
		d.Reason = "workload no longer placed on " + cluster
	default:
		d.Reason = "placed by policy " + policyName
	}
	subject := schemas.DecisionSubject(cluster, e.ref)
	if err := p.send(schemas.TypePlacementDecided, subject, d.DecisionID, d); err != nil {
		return err
	}
	published := structs.Published{Action: structs.CopyAction(action), Sequence: p.at.seq, Replicas: replicas, UID: ref.UID,
		NamespaceLabels: namespaceLabelsKey(d.NamespaceLabels), Pins: shape.pins}
	if action == schemas.ActionApply {
		published.Object, published.Content = e.objectJSON, e.content
	}
	p.editCopy(e.id, cluster, func(c *structs.Copy) {
		c.Published = published
		c.Reapply, c.ReapplyAfter = structs.ReapplyNone, 0 // what failed there is superseded
	})
	p.log.Info("decided", "workload", e.ref.Key(), "cluster", cluster, "action", action, "sequence", p.at.seq)
	if verdict != nil {
		verdict.carried = true
		p.verdictSaid(e, verdict.v, verdict.key)
	}
	return nil
}

// propagatedNamespaceLabels are the labels of a control-plane namespace that its copies in the workload clusters
// get: all but the name label every cluster sets itself, and fleetflow's own mark, which the applier sets.
func propagatedNamespaceLabels(ns *structs.Namespace) map[string]string {
	if ns == nil {
		return nil
	}
	var out map[string]string
	for k, v := range ns.Labels {
		if k == corev1.LabelMetadataName || k == schemas.LabelManagedBy || k == schemas.LabelWorkloadUID {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(ns.Labels))
		}
		out[k] = v
	}
	return out
}

// namespaceLabelsKey identifies a set of namespace labels: its pairs, sorted.
func namespaceLabelsKey(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(labels[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// contentKey is contentOf the workload's current object, hashed once per version.
func (e *workloadEntry) contentKey() (string, error) {
	if e.content == "" && e.objectJSON != nil {
		object, err := e.object()
		if err != nil {
			return "", err
		}
		e.content = objects.ContentOfSized(object, len(e.objectJSON))
	}
	return e.content, nil
}

// appliedNow reports whether the Apply prev copies what the workload's current object would, filling in
// the contents it had to hash so the next comparison does not hash again.
func (p *Controller) appliedNow(e *workloadEntry, c *structs.Copy) (bool, error) {
	prev := c.Published
	if len(prev.Object) > 0 && len(prev.Object) == len(e.objectJSON) && &prev.Object[0] == &e.objectJSON[0] {
		return true, nil // the very bytes it applied: no new version arrived since
	}
	current, err := e.contentKey()
	if err != nil {
		return false, err
	}
	if prev.Content == "" && prev.Object != nil {
		object, err := jsondec.DecodeObject(prev.Object)
		if err != nil {
			return false, fmt.Errorf("workload %s: decode its applied object: %w", e.ref.Key(), err)
		}
		prev.Content = objects.ContentOfSized(object, len(prev.Object))
	}
	if prev.Content != current {
		if prev.Content != c.Published.Content {
			p.editCopy(e.id, c.Cluster, func(c *structs.Copy) { c.Published.Content = prev.Content })
		}
		return false, nil
	}
	// Same content in a new version: the comparison is settled for these bytes too.
	prev.Object = e.objectJSON
	p.editCopy(e.id, c.Cluster, func(c *structs.Copy) { c.Published.Object, c.Published.Content = prev.Object, prev.Content })
	return true, nil
}
