package placer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
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
	// NodeReportRate and NodeReportBurst bound each cluster's node reports: how many a second, on average and
	// at once, on the events stream's time (defaults lifecycle.DefaultNodeReportRate and DefaultNodeReportBurst;
	// a negative rate sets no bound). See NodeReports.
	NodeReportRate, NodeReportBurst float64
	// Fit is how a gang is found to fit a cluster (default scheduler.FitNodes); scheduler.FitSummed compares
	// with Karmada's general estimator (summed free resources per cluster, no node view).
	Fit scheduler.FitMode
}

// Lifecycle is what of c tunes the placement lifecycle.
func (c PlacerConfig) Lifecycle() lifecycle.Config {
	return lifecycle.Config{HeartbeatTimeout: c.HeartbeatTimeout, PendingTimeout: c.PendingTimeout,
		ReservationTTL: c.ReservationTTL, FailedApplyRetry: c.FailedApplyRetry, Fit: c.Fit}
}

// Settings is what the placer's ticks carry of c (its defaults filled in), for a replay to decide as it did.
func (c PlacerConfig) Settings() *schemas.PlacerSettings { return c.Lifecycle().Settings() }

// Placer is the JetStream side of the placement lifecycle: it turns each delivery into a lifecycle.Event,
// skips what it already applied, hands it to the lifecycle.Controller, publishes the effects, and commits them
// once the streams stored them.
//
// It is idempotent under redelivery: an event whose stream sequence is not newer than the last one applied
// for its subject is ignored, and the controller derives decisions by comparing where a workload should be
// with what was already published, so a retried event publishes only what is missing. Decision ids are
// derived from the workload, the triggering sequence, the action and the cluster, so a decision published
// twice is dropped by JetStream's dedupe.
type Placer struct {
	publisher EventPublisher
	log       *slog.Logger
	ctrl      *lifecycle.Controller
	// seen is the last sequence applied per subject, above the consumer's acknowledgement floor once
	// ForgetAppliedThrough ran; applied lists what was recorded in seen, in the order it was, for
	// ForgetAppliedThrough to go through from the oldest.
	seen    map[string]uint64
	applied appliedLog
	// replayFloor is the last sequence of the events stream that the state stream the placer was rebuilt
	// from had copied: an event at or below it is in the view already, or was pruned with its object (see
	// setReplayFloor).
	replayFloor uint64
	// out publishes the effects of the events staged since the last Flush, which staged lists; changesPlaced
	// holds the times of the staged workload changes that placed their workload, for SubmitToPlacedSeconds.
	out           publishing
	staged        []eventKey
	changesPlaced []time.Time
}

// eventKey identifies an event: its subject and its sequence in the stream.
type eventKey struct {
	subject  string
	sequence uint64
}

// NewPlacer returns a placer with an empty fleet view and the given RIs (normally the built-ins).
func NewPlacer(publisher EventPublisher, ris *karta.Registry, config PlacerConfig, log *slog.Logger) (*Placer, error) {
	ctrl, err := lifecycle.New(ris, config.Lifecycle(), log)
	if err != nil {
		return nil, err
	}
	return &Placer{publisher: publisher, log: log, ctrl: ctrl, seen: map[string]uint64{}}, nil
}

// SetEpoch names the lifetime of the streams the placer's sequences count in; RunPlacer sets it from the
// events stream's creation time.
func (p *Placer) SetEpoch(epoch string) { p.ctrl.SetEpoch(epoch) }

// Snapshot is the placer's current fleet view, for tests and diagnostics.
func (p *Placer) Snapshot() *state.Snapshot { return p.ctrl.Snapshot() }

// Handle is the bus.Handler of the placer's consumer when it handles one event at a time: it returns once
// everything the event caused is stored.
func (p *Placer) Handle(ctx context.Context, d bus.Delivery) error {
	if err := p.Stage(ctx, d); err != nil {
		if flushErr := p.Flush(ctx); flushErr != nil {
			return errors.Join(err, flushErr)
		}
		return err
	}
	return p.Flush(ctx)
}

// Stage applies one event and sends what it causes without waiting for the streams to store it, so the
// next event is handled while the acknowledgements travel. Flush ends the batch; until it succeeds, the
// batch's events count as not applied, so a redelivered one is handled again. A publish that fails (at once,
// with a synchronous publisher, or when its acknowledgement is awaited) fails the whole batch.
func (p *Placer) Stage(ctx context.Context, d bus.Delivery) error {
	if d.StreamSequence <= p.seen[d.Subject] || d.StreamSequence <= p.replayFloor {
		return nil // already applied, e.g. during the rebuild from the state stream
	}
	if p.out.err != nil {
		return p.out.err // the batch already failed; it is retried as a whole
	}
	ev := lifecycle.Event{Subject: d.Subject, Sequence: d.StreamSequence, Type: d.Event.Type(), Payload: d.Payload,
		Time: d.Event.Time(), Stored: d.Stored}
	if ev.Time.IsZero() && ev.Stored.IsZero() {
		ev.Time = time.Now() // an event with no time at all is taken as happening now
	}
	effects, err := p.ctrl.Handle(ev)
	if errors.Is(err, lifecycle.ErrPermanent) {
		return bus.Permanent(fmt.Errorf("placer: %w", err))
	}
	if err != nil {
		return fmt.Errorf("placer: %w", err)
	}
	if err := p.publish(ctx, effects); err != nil {
		// With no other event staged the consumer has no batch to flush, so the batch fails here.
		if len(p.staged) == 0 {
			_ = p.Flush(ctx)
		}
		return err
	}
	p.staged = append(p.staged, eventKey{subject: d.Subject, sequence: d.StreamSequence})
	if ev.Type == schemas.TypeWorkloadChanged && placesAnew(effects) {
		p.changesPlaced = append(p.changesPlaced, ev.Time)
	}
	return nil
}

// placesAnew reports whether effects hold a Placed verdict, on its own or carried by an Apply.
func placesAnew(effects []lifecycle.Effect) bool {
	for _, e := range effects {
		switch payload := e.Payload.(type) {
		case *schemas.PlacementVerdict:
			if payload.Status == schemas.VerdictPlaced {
				return true
			}
		case *schemas.PlacementDecided:
			if payload.Verdict != nil && payload.Verdict.Status == schemas.VerdictPlaced {
				return true
			}
		}
	}
	return false
}

// publish sends effects. When one fails, some may be out already: the batch fails as a whole (Flush aborts
// it), and its redelivery sends them again under the same ids.
func (p *Placer) publish(ctx context.Context, effects []lifecycle.Effect) error {
	for _, e := range effects {
		if err := p.out.send(ctx, p.publisher, e); err != nil {
			p.out.err = err
			return err
		}
	}
	return nil
}

// Flush waits until everything the staged events published is stored, then marks them applied. If any
// publish failed, the controller puts back what the staged events changed, so their redelivery publishes
// the same decisions again under the same ids (JetStream drops what was stored already).
func (p *Placer) Flush(ctx context.Context) error {
	err := p.out.await(ctx)
	if err == nil {
		err = p.out.err
	}
	staged, changesPlaced := p.staged, p.changesPlaced
	p.staged, p.changesPlaced, p.out.err = p.staged[:0], p.changesPlaced[:0], nil
	if err != nil {
		p.ctrl.Abort()
		return err
	}
	p.ctrl.Commit()
	for _, s := range staged {
		p.markApplied(s.subject, s.sequence)
	}
	now := time.Now()
	for _, at := range changesPlaced {
		observe.SubmitToPlacedSeconds.Observe(max(0, now.Sub(at).Seconds()))
	}
	return nil
}

// TakeGone returns the workloads the placer stopped tracking since the last call, once what it published
// about them is stored (lifecycle.Controller.TakeGone). Call it after Flush, from the goroutine that handles
// the events.
func (p *Placer) TakeGone() []schemas.ObjectRef { return p.ctrl.TakeGone() }

// TakeGoneFleet returns the nodes and clusters deleted since the last call (lifecycle.Controller.TakeGoneFleet).
// Call it from the goroutine that handles the events.
func (p *Placer) TakeGoneFleet() lifecycle.GoneFleet { return p.ctrl.TakeGoneFleet() }

// FleetStats counts the workloads of the placer's view, placed or not and why not, and its clusters, Ready or
// not, with their capacity. It reads an immutable snapshot of the store and what the ledger committed, so
// /metrics may call it from any goroutine.
func (p *Placer) FleetStats() observe.FleetStats {
	snap := p.ctrl.Snapshot()
	stats := observe.FleetStats{UnplacedByReason: p.ctrl.UnplacedByReason(), ClusterReady: map[string]bool{}}
	for _, wl := range snap.Workloads() {
		if wl.Placement != nil {
			stats.Placed++
		} else {
			stats.Unplaced++
		}
	}
	for _, c := range snap.Clusters() {
		stats.ClusterReady[c.Name] = c.Ready
		if c.Ready {
			stats.Ready++
		} else {
			stats.NotReady++
		}
	}
	resources := snap.Resources()
	for _, c := range snap.Capacities() {
		for i := range resources.Len() {
			stats.Capacity = append(stats.Capacity, observe.ClusterResource{Cluster: c.Name, Resource: string(resources.Name(i)),
				Allocatable: resources.BaseAmount(i, c.Allocatable.Get(i)), Free: resources.BaseAmount(i, c.Free.Get(i))})
		}
	}
	return stats
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
	p.ctrl.ForgetThrough(floor)
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
