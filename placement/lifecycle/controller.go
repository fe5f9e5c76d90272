package lifecycle

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// Event is one recorded event as the controller takes it: its payload, where its stream put it, and when.
type Event struct {
	// Subject and Sequence are where the event is in its stream; the sequence stamps every store write and
	// decision the event causes.
	Subject  string
	Sequence uint64
	// Type is the CloudEvents type (schemas.Type*) and Payload the decoded, validated payload of that type.
	Type    string
	Payload schemas.Payload
	// Time is when its producer stamped it, by the producer's clock; Stored is when its stream stored it, by
	// the server's. Either may be zero; the controller's clock is Stored, else Time (schemas.AsStored).
	Time, Stored time.Time
}

// Effect is one event the controller asks to publish: a verdict or a decision.
type Effect struct {
	Type, Subject, ID string
	Payload           schemas.Payload
}

// ErrPermanent marks an event that can never be applied (a workload whose object is malformed): redelivering
// it cannot help.
var ErrPermanent = errors.New("the event cannot be applied")

// Controller owns the placement lifecycle: it folds events into the go-memdb fleet view, runs placement cycles
// when an event could change a workload's answer, and returns the verdicts and per-cluster decisions that carry
// the result out (move = apply first, delete after confirmation; failover; pending and failed-Apply moves;
// keep-where-it-runs; Invalid edits; the rebuild). It reads no clock and does no I/O: the same events in the
// same order give the same effects. It is not safe for concurrent use.
//
// What events say of the fleet is folded into the store and kept; what came of the published effects (each
// copy's last decision and the reports on it, each workload's last verdict) is in the ledger, a transaction
// per event: Handle stages an event's changes, Commit makes the staged events' changes final once their
// effects are stored, and Abort discards their ledger transactions, so their redelivery, which writes them
// again, publishes the same effects again under the same ids.
type Controller struct {
	config Config
	log    *slog.Logger

	store    *state.Store
	ledger   *state.Ledger
	sched    *scheduler.Scheduler
	blocked  *scheduler.Blocked
	registry *karta.Registry
	// upsertAndPlan is the store's UpsertWorkloadAndPlan; tests replace it to make that one write fail.
	upsertAndPlan func(seq uint64, now time.Time, info structs.WorkloadInfo,
		schedule func(*state.Snapshot) (*structs.Plan, error)) (*structs.Plan, error)

	// epoch names the streams' lifetime that sequences count in (see schemas.PlacementDecided.Epoch).
	epoch string
	// at is the event being handled; rebuild, the rebuild under way.
	at      moment
	rebuild rebuilding

	workloads map[string]*workloadEntry // by workload ID
	byUID     map[string]string         // control-plane uid -> workload ID
	// pending holds the IDs of workloads that reported pending pods, so the tick looks at those alone; an ID
	// stays until the tick finds its workload gone or no longer pending, which also covers bookkeeping that
	// an aborted batch put back.
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

	// nodeWakes throttles, per cluster, the retries of blocked workloads that node reports cause.
	nodeWakes nodeWakes
	txn       outbox
	forgotten forgotten
	// scratch is reused to encode objects.
	scratch []byte
}

// moment is the event being handled: its sequence, which stamps store writes and decisions, and its times.
type moment struct {
	seq uint64
	// now is the controller's clock: when the event's stream stored it, or the event's own time when that is
	// unknown (schemas.AsStored); stored is when its stream stored it, zero when unknown; eventTime is the time
	// its producer stamped on it.
	now, stored, eventTime time.Time
}

// rebuilding is the rebuild under way.
type rebuilding struct {
	// now is when it began, zero when none is under way: what the state stream holds is judged against it (a
	// decision stored less than a reservation TTL before still holds its room).
	now time.Time
	// goneCopies holds the copies whose last state is gone with no Apply to their cluster after it, by
	// control-plane uid and cluster: the rebuild applies them again (reapplyGoneCopies), as a running
	// controller does on the Gone.
	goneCopies map[string]map[string]*schemas.WorkloadStatus
}

// forgotten is what the controller stopped tracking, for its owner to prune from the streams.
type forgotten struct {
	// workloads lists the workloads deleted on the control plane whose copies' Deletes are sent, for TakeGone;
	// the first committed of them belong to committed events. entries are their entries since the last Commit,
	// which Abort tracks again.
	workloads []schemas.ObjectRef
	entries   []*workloadEntry
	committed int
	// fleet lists the nodes and clusters deleted, for TakeGoneFleet.
	fleet GoneFleet
}

// outbox is what the events handled since the last Commit or Abort sent and changed.
type outbox struct {
	// effects are the events to publish, in order.
	effects []Effect
	// staged are the events handled, with what they touched.
	staged []stagedEvent
	// redo holds, per event whose effects were not stored, what its handling touched, for its redelivery to
	// reconcile again: a handler that finds its change already in the store (a move, decided the first time)
	// touches nothing the second time, and the decisions put back would wait for an unrelated event.
	redo map[eventKey]*touchedSet
}

// GoneFleet is what the controller saw deleted of the fleet: nodes, and whole workload clusters.
type GoneFleet struct {
	Nodes []schemas.NodeDeleted
	// Clusters names deleted Cluster objects.
	Clusters []string
}

// New returns a controller with an empty fleet view and the given RIs (normally the built-ins).
func New(ris *karta.Registry, config Config, log *slog.Logger) (*Controller, error) {
	config = config.WithDefaults()
	store, err := state.NewStore(state.Config{ReservationTTL: config.ReservationTTL})
	if err != nil {
		return nil, err
	}
	ledger, err := state.NewLedger()
	if err != nil {
		return nil, err
	}
	return &Controller{
		config: config, log: log,
		store: store, ledger: ledger, upsertAndPlan: store.UpsertWorkloadAndPlan, sched: scheduler.New(log).WithFit(config.Fit), blocked: scheduler.NewBlocked(), registry: ris, nodeWakes: newNodeWakes(),
		workloads: map[string]*workloadEntry{}, byUID: map[string]string{},
		pending: map[string]struct{}{}, leaving: map[string]struct{}{},
		clusters: map[string]*clusterEntry{}, deletedClusters: map[string]bool{}, policies: map[string]*policyEntry{},
		refusedRIs: map[string]refusedObject{},
	}, nil
}

// SetEpoch names the lifetime of the streams the event sequences count in.
func (p *Controller) SetEpoch(epoch string) { p.epoch = epoch }

// PolicyRefused says why the newest version of the policy name is not in force; nil when it is, or when the
// controller knows no policy of that name.
func (p *Controller) PolicyRefused(name string) error {
	if pe := p.policies[name]; pe != nil {
		return pe.err
	}
	return nil
}

// Snapshot is the controller's current fleet view: immutable, so any goroutine may read it.
func (p *Controller) Snapshot() *state.Snapshot { return p.store.Snapshot() }

// UnplacedByReason counts the workloads whose last stored verdict does not place them, under each reason it
// gives (state.Ledger.UnplacedByReason). Any goroutine may call it.
func (p *Controller) UnplacedByReason() map[string]int { return p.ledger.UnplacedByReason() }

// Handle applies one event and returns the effects it causes, staged until Commit or Abort; the slice is valid
// until then. An event whose handling fails changes nothing that its redelivery would not redo.
func (p *Controller) Handle(ev Event) ([]Effect, error) {
	p.at.seq, p.at.stored, p.at.eventTime = ev.Sequence, ev.Stored, ev.Time
	p.at.now = schemas.AsStored(ev.Time, ev.Stored)
	touched, err := p.apply(ev.Type, ev.Payload, false)
	if err != nil {
		p.ledger.Discard()
		return nil, err
	}
	key := eventKey{subject: ev.Subject, sequence: ev.Sequence}
	if first, ok := p.txn.redo[key]; ok {
		touched.merge(first)
		delete(p.txn.redo, key)
	}
	effects, err := p.stage(key, touched)
	if err != nil {
		p.redoOnRedelivery(key, touched)
	}
	return effects, err
}

// stage reconciles what an event (key; none for a rebuild's end) touched and stages the effects until Commit
// or Abort; when that fails, the event's ledger transaction is discarded at once.
func (p *Controller) stage(key eventKey, touched *touchedSet) ([]Effect, error) {
	mark, goneMark := len(p.txn.effects), len(p.forgotten.workloads)
	err := p.reconcile(touched)
	if err == nil {
		err = p.ledger.Seal()
	}
	if err != nil {
		p.ledger.Discard()
		p.trackAgain(goneMark)
		p.txn.effects = p.txn.effects[:mark]
		return nil, err
	}
	p.txn.staged = append(p.txn.staged, stagedEvent{eventKey: key, touched: touched})
	return p.txn.effects[mark:], nil
}

// forget stops tracking a workload deleted on the control plane whose copies' Deletes are sent.
func (p *Controller) forget(e *workloadEntry) {
	for _, c := range p.ledger.CopiesOf(e.id) {
		p.ledger.PutCopy(&structs.Copy{WorkloadID: e.id, Cluster: c.Cluster})
	}
	p.ledger.ForgetVerdict(e.id)
	delete(p.workloads, e.id)
	delete(p.byUID, e.ref.UID)
	p.forgotten.workloads = append(p.forgotten.workloads, e.ref)
	p.forgotten.entries = append(p.forgotten.entries, e)
}

// trackAgain tracks again the workloads forgotten since the mark, as events whose effects were not stored
// forgot them; their ledger rows come back with the ledger.
func (p *Controller) trackAgain(mark int) {
	entriesMark := len(p.forgotten.entries) - (len(p.forgotten.workloads) - mark)
	for _, e := range p.forgotten.entries[entriesMark:] {
		if p.workloads[e.id] == nil {
			p.workloads[e.id] = e
			p.byUID[e.ref.UID] = e.id
		}
	}
	clear(p.forgotten.entries[entriesMark:])
	p.forgotten.entries = p.forgotten.entries[:entriesMark]
	p.forgotten.workloads = p.forgotten.workloads[:mark]
}

// Commit makes the changes of the events handled since the last Commit or Abort final: their effects are
// stored.
func (p *Controller) Commit() {
	p.ledger.Commit()
	clear(p.txn.effects)
	p.txn.effects, p.txn.staged = p.txn.effects[:0], p.txn.staged[:0]
	p.forgotten.committed = len(p.forgotten.workloads)
	clear(p.forgotten.entries)
	p.forgotten.entries = p.forgotten.entries[:0]
}

// Abort discards the ledger transactions of the events handled since the last Commit, because their effects
// may not be stored: their redelivery then publishes the same effects again under the same ids (the streams
// drop what was stored already).
func (p *Controller) Abort() {
	p.ledger.Abort()
	for _, s := range p.txn.staged {
		if s.eventKey != (eventKey{}) { // a rebuild's end is no event: it is not redelivered but done again
			p.redoOnRedelivery(s.eventKey, s.touched)
		}
	}
	clear(p.txn.effects)
	p.txn.effects, p.txn.staged = p.txn.effects[:0], p.txn.staged[:0]
	p.trackAgain(p.forgotten.committed)
}

// ForgetThrough drops what the controller keeps for the redelivery of events at or below floor: those are not
// delivered again.
func (p *Controller) ForgetThrough(floor uint64) {
	for key := range p.txn.redo {
		if key.sequence <= floor {
			delete(p.txn.redo, key)
		}
	}
}

// redoOnRedelivery keeps what an event touched, for its redelivery to reconcile again.
func (p *Controller) redoOnRedelivery(key eventKey, touched *touchedSet) {
	if p.txn.redo == nil {
		p.txn.redo = map[eventKey]*touchedSet{}
	}
	p.txn.redo[key] = touched
}

// TakeGone returns the workloads the controller stopped tracking since the last call, as of the last Commit:
// each was deleted on the control plane, and the Deletes of its copies are stored for the appliers, so what
// the state stream keeps of it (its deletion, last verdict, statuses, applier reports and decisions) serves no
// rebuild any more.
func (p *Controller) TakeGone() []schemas.ObjectRef {
	if p.forgotten.committed == 0 {
		return nil
	}
	gone := slices.Clone(p.forgotten.workloads[:p.forgotten.committed])
	p.forgotten.workloads = append(p.forgotten.workloads[:0], p.forgotten.workloads[p.forgotten.committed:]...)
	p.forgotten.committed = 0
	return gone
}

// TakeGoneFleet returns the nodes and clusters deleted since the last call (and, while rebuilding, those the
// state stream still holds deletions of), and the deleted clusters that sent something since their deletion.
// A deletion serves no rebuild once the controller has applied it, nor does what the state stream holds of a
// deleted cluster (its nodes, heartbeats, installed APIs, and the statuses, reports and decisions of workloads
// on it, from before its deletion or after), so all of it can be pruned, whenever: a node or a cluster of that
// name that comes back is published anew.
func (p *Controller) TakeGoneFleet() GoneFleet {
	gone := p.forgotten.fleet
	p.forgotten.fleet = GoneFleet{}
	return gone
}

// send stages one effect. The payload is validated here, so a bad one fails the event that made it rather than
// the whole batch.
func (p *Controller) send(eventType, subject, id string, payload schemas.Payload) error {
	if err := payload.Validate(); err != nil {
		return fmt.Errorf("lifecycle: %s payload for %s: %w", eventType, subject, err)
	}
	p.txn.effects = append(p.txn.effects, Effect{Type: eventType, Subject: subject, ID: id, Payload: payload})
	return nil
}
