package placer

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// EventPublisher publishes CloudEvents; *bus.Publisher implements it.
type EventPublisher interface {
	Publish(ctx context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error)
}

// PlacerConfig tunes the placer's time-based behaviour.
type PlacerConfig struct {
	// HeartbeatTimeout is how long a cluster may stay silent before it is NotReady and its workloads fail
	// over (default 30s).
	HeartbeatTimeout time.Duration
	// PendingTimeout is how long a placed workload's pods may stay Pending before it moves to another
	// cluster that fits (default 5m).
	PendingTimeout time.Duration
	// ReservationTTL is how long a decision's reservations hold capacity without the cluster showing the
	// pods (default 5m).
	ReservationTTL time.Duration
	// LeaseTTL is how long the placer lease outlives its holder's last renewal; a standby placer takes
	// over within about this long after the holder dies (default 15s, see app.RunPlacer).
	LeaseTTL time.Duration
	// StatePruneGrace is how long after a deleted workload is gone (TakeGone) what the state stream keeps of
	// it is pruned, so the reports that follow its Deletes go with it (default 1m, see app.RunPlacer).
	StatePruneGrace time.Duration
	// FailedApplyRetry is how long after an applier gave up on an Apply (forbidden, invalid, an old CRD) it is
	// sent again when nothing else changed (default 5m): what was refused may be fixed in the cluster.
	FailedApplyRetry time.Duration
}

func (c PlacerConfig) withDefaults() PlacerConfig {
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = 30 * time.Second
	}
	if c.PendingTimeout <= 0 {
		c.PendingTimeout = 5 * time.Minute
	}
	if c.ReservationTTL <= 0 {
		c.ReservationTTL = state.DefaultReservationTTL
	}
	if c.FailedApplyRetry <= 0 {
		c.FailedApplyRetry = 5 * time.Minute
	}
	return c
}

// Settings is what the placer's ticks carry of c (its defaults filled in), for a replay to decide as it did.
func (c PlacerConfig) Settings() *schemas.PlacerSettings {
	c = c.withDefaults()
	return &schemas.PlacerSettings{HeartbeatTimeout: metav1.Duration{Duration: c.HeartbeatTimeout},
		PendingTimeout: metav1.Duration{Duration: c.PendingTimeout}, ReservationTTL: metav1.Duration{Duration: c.ReservationTTL},
		FailedApplyRetry: metav1.Duration{Duration: c.FailedApplyRetry}}
}

// WithSettings is c deciding with the settings a tick carried.
func (c PlacerConfig) WithSettings(s *schemas.PlacerSettings) PlacerConfig {
	c.HeartbeatTimeout, c.PendingTimeout = s.HeartbeatTimeout.Duration, s.PendingTimeout.Duration
	c.ReservationTTL, c.FailedApplyRetry = s.ReservationTTL.Duration, s.FailedApplyRetry.Duration
	return c
}

// Placer keeps the placement core's fleet view up to date from events, runs a placement cycle whenever an
// event could change a workload's answer, and publishes verdicts and per-cluster decisions.
//
// It is idempotent under redelivery: an event whose stream sequence is not newer than the last one applied
// for its subject is ignored, and decisions are derived by comparing where a workload should be (the
// store's placement) with what was already published, so a retried event publishes only what is missing.
// Decision ids are derived from the workload, the triggering sequence, the action and the cluster, so a
// decision published twice is dropped by JetStream's dedupe.
type Placer struct {
	publisher EventPublisher
	log       *slog.Logger
	config    PlacerConfig

	store    *state.Store
	sched    *scheduler.Scheduler
	blocked  *scheduler.Blocked
	registry *karta.Registry
	// upsertAndPlan is the store's UpsertWorkloadAndPlan; tests replace it to make that one write fail.
	upsertAndPlan func(seq uint64, now time.Time, info structs.WorkloadInfo,
		schedule func(*state.Snapshot) (*structs.Plan, error)) (*structs.Plan, error)

	// seq is the stream sequence of the event being handled; it stamps store writes and decisions.
	seq uint64
	// epoch names the streams' lifetime that seq counts in (see schemas.PlacementDecided.Epoch).
	epoch string
	// now is the time of the event being handled (a tick's time, or the wall clock); stored is when its stream
	// stored it, zero when unknown; eventTime is the time its producer stamped on it, by the producer's clock.
	now, stored, eventTime time.Time
	// seen is the last sequence applied per subject, above the consumer's acknowledgement floor once
	// ForgetAppliedThrough ran; applied lists what was recorded in seen, in the order it was, for
	// ForgetAppliedThrough to go through from the oldest.
	seen    map[string]uint64
	applied appliedLog
	// replayFloor is the last sequence of the events stream that the state stream the placer was rebuilt
	// from had copied: an event at or below it is in the view already, or was pruned with its object (see
	// setReplayFloor).
	replayFloor uint64
	workloads   map[string]*workloadEntry // by workload ID
	byUID       map[string]string         // control-plane uid -> workload ID
	// pending holds the IDs of workloads that reported pending pods, so the tick looks at those alone; an ID
	// stays until the tick finds its workload gone or no longer pending, which also covers bookkeeping that
	// a failed batch put back.
	pending map[string]struct{}
	// leaving holds the IDs of workloads with an Apply an applier gave up on (applyFailed), so the tick looks
	// at those alone; an ID stays until its workload left those clusters or the failures no longer count.
	leaving  map[string]struct{}
	clusters map[string]*clusterEntry
	// deletedClusters names the clusters whose Cluster object was deleted and not registered again. What their
	// producers and appliers still send (a runner finishing its Deletes, a producer nobody stopped) stays out of
	// the view, and each such event has its cluster reported gone again (TakeGoneFleet): the state stream would
	// otherwise keep it for good, and every rebuild would find the cluster beating.
	deletedClusters map[string]bool
	// heldOfDeleted keeps, per deleted cluster, the last node states and APIs its producer sent after the
	// deletion: a Cluster deleted and registered again under the name may have its new producer's reports
	// arrive before its registration, and they are applied then rather than missing until the producer's resync.
	heldOfDeleted map[string]*heldReports
	policies      map[string]*policyEntry
	// refusedRIs are the RIs whose newest version was refused, by name: their subject and UID, for a rebuild
	// to look up their last valid version in the history (recoverLastValid).
	refusedRIs map[string]refusedObject
	// batch holds the publishes awaiting acknowledgement, staged the events that caused them, and batchErr
	// the failure of an acknowledgement awaited before Flush, which fails the whole batch.
	batch    *publishBatch
	queued   int
	staged   []stagedEvent
	batchErr error
	// redo holds, per event whose publishes failed, what its handling touched, for its redelivery to
	// reconcile again: a handler that finds its change already in the store (a move, decided the first time)
	// touches nothing the second time, and the decisions put back would wait for an unrelated event.
	redo map[eventKey]*touchedSet
	// gone lists the workloads the placer stopped tracking (deleted on the control plane, their copies'
	// Deletes sent), for TakeGone; the first goneCommitted of them belong to batches whose publishes are stored.
	gone          []schemas.ObjectRef
	goneCommitted int
	// goneFleet lists the nodes and clusters deleted, for TakeGoneFleet.
	goneFleet GoneFleet
	// goneCopies holds, while rebuilding, the copies whose last state is gone with no Apply to their cluster
	// after it, by control-plane uid and cluster: a restarted placer applies them again (reapplyGoneCopies), as
	// a running one does on the Gone.
	goneCopies map[string]map[string]*schemas.WorkloadStatus
	// scratch is reused to encode objects on the placer's goroutine.
	scratch []byte
}

type workloadEntry struct {
	id  string
	ref schemas.ObjectRef
	// objectJSON is the control-plane object as last received, encoded: kept as bytes rather than the
	// decoded map because bytes cost the collector nothing to scan (a fleet's workloads were a quarter of
	// the placer's heap as maps) and decisions embed them as they are. nil once the workload is deleted.
	objectJSON []byte
	// content identifies what an applier copies of the object (contentOf), computed on first use (see
	// contentKey); resourceVersion and generation are the object's.
	content         string
	resourceVersion string
	generation      int64
	labels          map[string]string
	// analysis is nil when the workload could not be analyzed; analysisErr says why.
	analysis    *karta.Analysis
	analysisErr string
	// verdictAnalysis is the analysis as verdicts carry it, shared by every verdict until the next analysis
	// (payloads are never modified once sent); verdictAnalysisKey identifies it (analysisKey).
	verdictAnalysis    *schemas.Analysis
	verdictAnalysisKey string
	// published holds the last decision published per cluster.
	published map[string]publishedDecision
	// confirmed holds the sequence of the last decision each cluster's applier reported applied.
	confirmed map[string]uint64
	// pendingSince is when the workload's pods started pending on its cluster, zero when none pend.
	pendingCluster string
	pendingSince   time.Time
	// avoid maps clusters the workload is being moved off to why: its pods stayed Pending there, or it
	// failed there, or could not be applied there, under a policy that reschedules on failure.
	avoid map[string]string
	// applyFailed maps clusters whose applier gave up on the workload's Apply to that failure, while it is
	// the last decision published for the cluster: under a policy that reschedules on failure the workload
	// moves off as soon as another cluster fits (see leaveFailedApplies).
	applyFailed map[string]failedApply
	// lastVerdict identifies the last verdict published, to avoid repeating identical verdicts.
	lastVerdict string
	// deleted is set once the control plane deleted the workload; the entry goes once the Deletes of its
	// copies are sent, and comes back if an applier gives up on one (see onFailed).
	deleted bool
	// restore is the newest verdict read while rebuilding (on its own or carried by an Apply), which says
	// where the workload was placed; newestApply is the newest Apply read, which says so when the Apply that
	// carried the verdict gave way to a later one in the state stream. Both are used only while rebuilding.
	restore     *schemas.PlacementVerdict
	newestApply *appliedPlacement
	// restoreAt is when the stream stored restore (or the Apply that carried it), by the server's clock: a
	// restored placement holds its reservation again until that time plus the reservation TTL.
	restoreAt time.Time
	// redelete lists clusters whose applier gave up on a Delete (the cluster was down): the copy may
	// still be there, so the Delete is sent again once the cluster is Ready.
	redelete map[string]bool
	// reapply holds the clusters whose applier gave up on the workload's last Apply there; set true once the
	// cluster changed since (Ready again, new APIs, labels or taints), or FailedApplyRetry passed, which has the
	// Apply sent again the next time the workload is placed there: a cluster that did not answer for a while,
	// lacked the kind, refused it by RBAC, a webhook or an older CRD may take it now. A workload placed where its
	// Apply failed would otherwise keep its earlier version there for good. Not sent again sooner, or a refused
	// Apply would come back every minute.
	reapply map[string]bool
	// finished lists clusters whose copy last reported a Completed or Failed phase: such a copy that goes
	// (a TTL after finishing, a user's cleanup) is not applied again, which would run the job again.
	finished map[string]bool
	// completed lists clusters whose copy last reported Completed: a job that ran to its end there, which
	// re-evaluation leaves where it is (completedEverywhere).
	completed map[string]bool
	// reapplied is when a copy deleted in its cluster was last applied again, per cluster, to hold back a
	// loop with something that keeps deleting it.
	reapplied map[string]time.Time
}

type publishedDecision struct {
	action   schemas.DecisionAction
	sequence uint64
	// uid is the uid of the workload the decision was for. An entry goes on with a workload created again under
	// its name, and a copy of the earlier one may still stand (its Delete was given up on while its cluster was
	// down): that copy's Delete must name its uid, the applier deleting only the copies of the uid it is given,
	// and it is no Apply of the new workload. "" for decisions recorded before it was kept.
	uid string
	// object is the control-plane object the decision applied (before a Divide's share of replicas), the
	// same bytes as its workload's objectJSON then. content identifies what an applier copies of it
	// (contentOf), so a new resourceVersion that changed nothing to copy (fleetflow's own annotations,
	// status) publishes no new decision. The content is hashed only when an object arrives that is not
	// those very bytes: most workloads are decided once, and hashing cost about a tenth of the placer's
	// time per workload. A decision read back while rebuilding has its content and no object.
	object   []byte
	content  string
	replicas int64
	// namespaceLabels are the namespace labels an Apply carried (namespaceLabelsKey), for a restarted placer to
	// tell which namespaces were relabelled while none ran.
	namespaceLabels string
}

// failedApply is an Apply an applier gave up on: its decision sequence, the API error, and when the placer
// learnt of it (its clock then, the stream's time of the report; zero when it had none yet, in which case the
// next tick stamps it), from which FailedApplyRetry counts.
type failedApply struct {
	sequence uint64
	err      string
	at       time.Time
}

// appliedPlacement is what an Apply read while rebuilding says about where its workload is placed.
type appliedPlacement struct {
	sequence uint64
	// at is when the stream stored the Apply.
	at            time.Time
	epoch, policy string
	clusters      []string
	avoid         map[string]string
	// object is the object the Apply carried, kept only for an Apply stored less than a reservation TTL before
	// it was read: a workload placed nowhere now keeps the reservation of the copy it keeps running, which is
	// this version's, not the one it has now (restoreKeptReservation).
	object map[string]any
}

type clusterEntry struct {
	name string
	// registered is true once the control plane has a Cluster object for it.
	registered bool
	labels     map[string]string
	taints     []corev1.Taint
	// invalid says why the Cluster object is invalid, "" when it is not (structs.Cluster.Invalid).
	invalid       string
	apis          []string
	lastHeartbeat time.Time
	ready         bool
}

type policyEntry struct {
	name     string
	compiled *policy.Policy
	err      error
	// refused is the version refused with err, kept to compile again when an RI changes what it may name (a
	// Divide over a kind whose RI is applied after the policy, as `kubectl apply -f dir/` orders them).
	refused *v1alpha1.SchedulePolicy
	// object is where the policy's versions are in the events stream: its subject and UID.
	object refusedObject
}

// refusedObject locates an object's versions in the events stream's history.
type refusedObject struct {
	subject, uid string
}

// NewPlacer returns a placer with an empty fleet view and the given RIs (normally the built-ins).
func NewPlacer(publisher EventPublisher, ris *karta.Registry, config PlacerConfig, log *slog.Logger) (*Placer, error) {
	config = config.withDefaults()
	store, err := state.NewStore(state.Config{ReservationTTL: config.ReservationTTL})
	if err != nil {
		return nil, err
	}
	return &Placer{
		publisher: publisher, log: log, config: config,
		store: store, upsertAndPlan: store.UpsertWorkloadAndPlan, sched: scheduler.New(log), blocked: scheduler.NewBlocked(), registry: ris,
		seen: map[string]uint64{}, workloads: map[string]*workloadEntry{}, byUID: map[string]string{},
		pending: map[string]struct{}{}, leaving: map[string]struct{}{},
		clusters: map[string]*clusterEntry{}, deletedClusters: map[string]bool{}, policies: map[string]*policyEntry{},
		refusedRIs: map[string]refusedObject{},
	}, nil
}

// SetEpoch names the lifetime of the streams the placer's sequences count in; RunPlacer sets it from the
// events stream's creation time.
func (p *Placer) SetEpoch(epoch string) { p.epoch = epoch }

// PolicyRefused says why the newest version of the policy name is not in force; nil when it is, or when the
// placer knows no policy of that name.
func (p *Placer) PolicyRefused(name string) error {
	if pe := p.policies[name]; pe != nil {
		return pe.err
	}
	return nil
}

// Snapshot is the placer's current fleet view, for tests and diagnostics.
func (p *Placer) Snapshot() *state.Snapshot { return p.store.Snapshot() }

// Handle is the bus.Handler of the placer's consumer when it handles one event at a time: it returns once
// everything the event caused is stored.
func (p *Placer) Handle(ctx context.Context, d bus.Delivery) error {
	if err := p.Stage(ctx, d); err != nil {
		return err
	}
	return p.Flush(ctx)
}

// Stage applies one event and sends what it causes without waiting for the streams to store it, so the
// next event is handled while the acknowledgements travel. Flush ends the batch; until it succeeds, the
// batch's events count as not applied, so a redelivered one is handled again.
func (p *Placer) Stage(ctx context.Context, d bus.Delivery) error {
	if d.StreamSequence <= p.seen[d.Subject] || d.StreamSequence <= p.replayFloor {
		return nil // already applied, e.g. during the rebuild from the state stream
	}
	if p.batchErr != nil {
		return p.batchErr // the batch already failed; it is retried as a whole
	}
	p.seq, p.stored, p.eventTime = d.StreamSequence, d.Stored, d.Event.Time()
	p.now = time.Now()
	if !d.Event.Time().IsZero() {
		p.now = d.Event.Time()
	}
	p.now = schemas.AsStored(p.now, d.Stored)
	touched, err := p.apply(d.Event.Type(), d.Payload, false)
	if err != nil {
		return err
	}
	key := eventKey{subject: d.Subject, sequence: d.StreamSequence}
	if first, ok := p.redo[key]; ok {
		touched.merge(first)
		delete(p.redo, key)
	}
	saved, goneMark := p.saveBookkeeping(touched), len(p.gone)
	if err := p.reconcile(ctx, touched); err != nil {
		p.restoreBookkeeping(saved)
		p.gone = p.gone[:goneMark]
		p.redoOnRedelivery(key, touched)
		return err
	}
	p.staged = append(p.staged, stagedEvent{eventKey: key, saved: saved, touched: touched})
	return nil
}

// redoOnRedelivery keeps what an event touched, for its redelivery to reconcile again.
func (p *Placer) redoOnRedelivery(key eventKey, touched *touchedSet) {
	if p.redo == nil {
		p.redo = map[eventKey]*touchedSet{}
	}
	p.redo[key] = touched
}

// Flush waits until everything the staged events published is stored, then marks them applied. If any
// publish failed, the bookkeeping of every staged event is put back, newest first, so their redelivery
// publishes the same decisions again under the same ids (JetStream drops what was stored already).
func (p *Placer) Flush(ctx context.Context) error {
	err := p.awaitAcknowledgements(ctx)
	if err == nil {
		err = p.batchErr
	}
	staged := p.staged
	p.staged, p.batchErr = p.staged[:0], nil
	if err != nil {
		for i := len(staged) - 1; i >= 0; i-- {
			p.restoreBookkeeping(staged[i].saved)
			p.redoOnRedelivery(staged[i].eventKey, staged[i].touched)
		}
		p.gone = p.gone[:p.goneCommitted]
		return err
	}
	for _, s := range staged {
		p.markApplied(s.subject, s.sequence)
	}
	p.goneCommitted = len(p.gone)
	return nil
}

// TakeGone returns the workloads the placer stopped tracking since the last call, once what it published
// about them is stored: each was deleted on the control plane, and the Deletes of its copies are stored for
// the appliers, so what the state stream keeps of it (its deletion, last verdict, statuses, applier reports
// and decisions) serves no rebuild any more. Call it after Flush, from the goroutine that handles the events.
func (p *Placer) TakeGone() []schemas.ObjectRef {
	if p.goneCommitted == 0 {
		return nil
	}
	gone := slices.Clone(p.gone[:p.goneCommitted])
	p.gone = append(p.gone[:0], p.gone[p.goneCommitted:]...)
	p.goneCommitted = 0
	return gone
}

// GoneFleet is what the placer saw deleted of the fleet: nodes, and whole workload clusters.
type GoneFleet struct {
	Nodes []schemas.NodeDeleted
	// Clusters names deleted Cluster objects.
	Clusters []string
}

// TakeGoneFleet returns the nodes and clusters deleted since the last call (and, while rebuilding, those the
// state stream still holds deletions of), and the deleted clusters that sent something since their deletion.
// A deletion serves no rebuild once the placer has applied it, nor does what the state stream holds of a
// deleted cluster (its nodes, heartbeats, installed APIs, and the statuses, reports and decisions of workloads
// on it, from before its deletion or after), so all of it can be pruned, whenever: a node or a cluster of that
// name that comes back is published anew. Call it from the goroutine that handles the events.
func (p *Placer) TakeGoneFleet() GoneFleet {
	gone := p.goneFleet
	p.goneFleet = GoneFleet{}
	return gone
}

// ForgetAppliedThrough drops the placer's record of events at or below floor, the acknowledgement floor of
// its durable consumer, and returns how many subjects it forgot. JetStream never delivers such an event
// again, so the record guards against nothing; kept, it would hold a sequence for every subject the placer
// ever saw, two or more per workload ever submitted, for as long as the placer runs. It goes through at most
// maxForgetPerCall records, oldest first, so forgetting a rebuild's hundreds of thousands of subjects is
// spread over many batches rather than stalling one. Call it between batches (after Flush), from the
// goroutine that handles the events.
func (p *Placer) ForgetAppliedThrough(floor uint64) int {
	forgotten := 0
	for range maxForgetPerCall {
		r, ok := p.applied.oldest()
		// Records are in the order they were applied, which redeliveries can make out of sequence order:
		// one above the floor holds back those after it, which only forgets them later.
		if !ok || r.sequence > floor {
			break
		}
		p.applied.drop()
		if p.seen[r.subject] == r.sequence {
			delete(p.seen, r.subject)
			forgotten++
		}
	}
	// An event at or below the floor is not delivered again (it was given up on), so its redo is not needed.
	for key := range p.redo {
		if key.sequence <= floor {
			delete(p.redo, key)
		}
	}
	return forgotten
}

// maxForgetPerCall bounds the work of one ForgetAppliedThrough: about a hundred microseconds.
const maxForgetPerCall = 4096

func (p *Placer) markApplied(subject string, seq uint64) {
	p.seen[subject] = seq
	p.applied.add(appliedRecord{subject: subject, sequence: seq})
}

// appliedLog is a queue of applied records, oldest first.
type appliedLog struct {
	records []appliedRecord
	head    int
}

type appliedRecord struct {
	subject  string
	sequence uint64
}

func (l *appliedLog) add(r appliedRecord) { l.records = append(l.records, r) }

func (l *appliedLog) oldest() (appliedRecord, bool) {
	if l.head == len(l.records) {
		return appliedRecord{}, false
	}
	return l.records[l.head], true
}

// drop removes the oldest record, moving the rest down once half of the slice is dropped records, so the
// queue's memory follows what it holds.
func (l *appliedLog) drop() {
	l.records[l.head] = appliedRecord{}
	l.head++
	if l.head == len(l.records) {
		l.records, l.head = l.records[:0], 0
	} else if l.head > len(l.records)/2 {
		n := copy(l.records, l.records[l.head:])
		clear(l.records[n:])
		l.records, l.head = l.records[:n], 0
	}
}

// stagedEvent is an event handled since the last Flush: what it changed of the bookkeeping, to put back
// if its publishes fail, what it touched, to reconcile again when it is redelivered then, and its position,
// to mark it applied once they are stored.
type stagedEvent struct {
	eventKey
	saved   []savedEntry
	touched *touchedSet
}

// eventKey identifies an event: its subject and its sequence in the stream.
type eventKey struct {
	subject  string
	sequence uint64
}

// touchedSet collects workloads whose decisions may need publishing after an event, with the cycle
// outcome to report for the ones that were scheduled.
type touchedSet struct {
	ids      map[string]bool
	verdicts map[string]*structs.Decision
	// invalid lists workloads whose analysis failed, with why.
	invalid map[string]string
}

func newTouched() *touchedSet {
	return &touchedSet{ids: map[string]bool{}, verdicts: map[string]*structs.Decision{}, invalid: map[string]string{}}
}

func (t *touchedSet) add(id string) { t.ids[id] = true }

// merge adds what other touched, keeping t's own cycle outcome for a workload both decided.
func (t *touchedSet) merge(other *touchedSet) {
	maps.Copy(t.ids, other.ids)
	for id, d := range other.verdicts {
		if _, ok := t.verdicts[id]; !ok {
			t.verdicts[id] = d
		}
	}
	for id, why := range other.invalid {
		if _, ok := t.invalid[id]; !ok {
			t.invalid[id] = why
		}
	}
}

func (t *touchedSet) decided(d *structs.Decision) {
	t.ids[d.WorkloadID] = true
	t.verdicts[d.WorkloadID] = d
}

// apply folds one event into the fleet view and runs the cycles it calls for. With rebuilding set it
// only updates the view: decisions are reconciled once the whole state has been read.
func (p *Placer) apply(eventType string, payload schemas.Payload, rebuilding bool) (*touchedSet, error) {
	touched := newTouched()
	var err error
	switch eventType {
	case schemas.TypeWorkloadChanged:
		err = p.onWorkloadChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypeWorkloadDeleted:
		err = p.onWorkloadDeleted(payload.(*schemas.ObjectDeleted), touched)
	case schemas.TypePolicyChanged:
		err = p.onPolicyChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypePolicyDeleted:
		err = p.onPolicyDeleted(payload.(*schemas.ObjectDeleted), touched, rebuilding)
	case schemas.TypeResourceInterfaceChanged:
		err = p.onResourceInterfaceChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypeResourceInterfaceDeleted:
		err = p.onResourceInterfaceDeleted(payload.(*schemas.ObjectDeleted), touched, rebuilding)
	case schemas.TypeNamespaceChanged, schemas.TypeNamespaceDeleted:
		err = p.onNamespace(eventType, payload, touched, rebuilding)
	case schemas.TypeClusterChanged:
		err = p.onClusterChanged(payload.(*schemas.ObjectChanged), touched, rebuilding)
	case schemas.TypeClusterDeleted:
		err = p.onClusterDeleted(payload.(*schemas.ObjectDeleted), touched, rebuilding)
	case schemas.TypeClusterHeartbeat:
		err = p.onHeartbeat(payload.(*schemas.ClusterHeartbeat), touched, rebuilding)
	case schemas.TypeClusterAPIs:
		err = p.onAPIs(payload.(*schemas.ClusterAPIs), touched, rebuilding)
	case schemas.TypeNodeChanged:
		err = p.onNode(payload.(*schemas.NodeState), touched, rebuilding)
	case schemas.TypeNodeDeleted:
		err = p.onNodeDeleted(payload.(*schemas.NodeDeleted), touched, rebuilding)
	case schemas.TypeWorkloadStatus:
		err = p.onStatus(payload.(*schemas.WorkloadStatus), touched, rebuilding)
	case schemas.TypePlacementApplied:
		p.onApplied(payload.(*schemas.PlacementApplied), touched)
	case schemas.TypePlacementFailed:
		err = p.onFailed(payload.(*schemas.PlacementFailed), touched, rebuilding)
	case schemas.TypePlacerTick:
		if !rebuilding {
			err = p.onTick(payload.(*schemas.PlacerTick), touched)
		}
	case schemas.TypePlacementDecided:
		p.onDecided(payload.(*schemas.PlacementDecided))
	case schemas.TypePlacementVerdict:
		p.onVerdict(payload.(*schemas.PlacementVerdict))
	}
	if err != nil {
		return nil, fmt.Errorf("placer: %s at sequence %d: %w", eventType, p.seq, err)
	}
	return touched, nil
}
