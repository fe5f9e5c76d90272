package consumers

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// Decider chooses the cluster for a workload. It is the seam where the placement core plugs in.
type Decider interface {
	// Decide returns the cluster for the workload; current is where it runs now ("" if nowhere).
	Decide(ctx context.Context, workload *schemas.WorkloadChanged, current string) (Decision, error)
	// Clusters lists every workload cluster the decider knows, so a deletion of a workload with unknown
	// placement can be sent everywhere.
	Clusters() []string
}

// Decision is a Decider's answer.
type Decision struct {
	Cluster string
	Policy  string
	Reason  string
}

// FirstReadyCluster is the walking-skeleton decider: the first Ready cluster by name. A workload keeps
// its cluster while that cluster is Ready.
type FirstReadyCluster struct {
	mu    sync.RWMutex
	ready map[string]bool
}

// NewFirstReadyCluster starts with the given clusters Ready.
func NewFirstReadyCluster(clusters ...string) *FirstReadyCluster {
	d := &FirstReadyCluster{ready: map[string]bool{}}
	for _, c := range clusters {
		d.ready[c] = true
	}
	return d
}

// SetReady marks a cluster Ready or not.
func (d *FirstReadyCluster) SetReady(cluster string, ready bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ready[cluster] = ready
}

// Clusters implements Decider.
func (d *FirstReadyCluster) Clusters() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	names := make([]string, 0, len(d.ready))
	for name := range d.ready {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Decide implements Decider.
func (d *FirstReadyCluster) Decide(_ context.Context, _ *schemas.WorkloadChanged, current string) (Decision, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if current != "" && d.ready[current] {
		return Decision{Cluster: current, Reason: "already placed; cluster still Ready"}, nil
	}
	for _, name := range d.Clusters() {
		if d.ready[name] {
			return Decision{Cluster: name, Reason: "first Ready cluster by name"}, nil
		}
	}
	return Decision{}, fmt.Errorf("no Ready workload cluster")
}

// Placer consumes workload events and publishes placement decisions to per-cluster subjects.
type Placer struct {
	Decider   Decider
	Publisher *bus.Publisher
	Log       *slog.Logger

	mu        sync.Mutex
	placement map[string]string // workload uid -> cluster
}

// NewPlacer returns a placer.
func NewPlacer(decider Decider, publisher *bus.Publisher, log *slog.Logger) *Placer {
	return &Placer{Decider: decider, Publisher: publisher, Log: log, placement: map[string]string{}}
}

// Handle is the bus.Handler of the placer's consumer.
func (p *Placer) Handle(ctx context.Context, d bus.Delivery) error {
	switch payload := d.Payload.(type) {
	case *schemas.WorkloadChanged:
		return p.place(ctx, d, payload)
	case *schemas.WorkloadDeleted:
		return p.unplace(ctx, d, payload.Workload)
	default:
		return bus.Permanent(fmt.Errorf("placer does not handle event type %s", d.Event.Type()))
	}
}

func (p *Placer) place(ctx context.Context, d bus.Delivery, workload *schemas.WorkloadChanged) error {
	ref := workload.Ref()
	log := p.Log.With("workload", ref.Key())
	p.mu.Lock()
	current := p.placement[ref.UID]
	p.mu.Unlock()
	decision, err := p.Decider.Decide(ctx, workload, current)
	if err != nil {
		return fmt.Errorf("decide %s: %w", ref, err)
	}
	// The input's stream sequence is monotonic per workload and stable under redelivery, so it is both the
	// decision's sequence and, with the uid, its dedupe identity.
	decided := &schemas.PlacementDecided{
		DecisionID: fmt.Sprintf("%s/%d", ref.UID, d.StreamSequence),
		Workload:   ref,
		Cluster:    decision.Cluster,
		Action:     schemas.ActionApply,
		Sequence:   d.StreamSequence,
		Object:     workload.Object,
		Policy:     decision.Policy,
		Reason:     decision.Reason,
	}
	if err := p.publish(ctx, decided); err != nil {
		return err
	}
	if current != "" && current != decision.Cluster {
		// Apply on the new cluster was published first; only then remove it from the old one.
		if err := p.publish(ctx, deleteDecision(decided, current)); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.placement[ref.UID] = decision.Cluster
	p.mu.Unlock()
	log.Info("placed", "cluster", decision.Cluster, "reason", decision.Reason, "sequence", decided.Sequence)
	return nil
}

func (p *Placer) unplace(ctx context.Context, d bus.Delivery, ref schemas.ObjectRef) error {
	p.mu.Lock()
	current, known := p.placement[ref.UID]
	p.mu.Unlock()
	targets := []string{current}
	if !known {
		targets = p.Decider.Clusters()
	}
	for _, cluster := range targets {
		decided := &schemas.PlacementDecided{
			DecisionID: fmt.Sprintf("%s/%d/%s", ref.UID, d.StreamSequence, cluster),
			Workload:   ref,
			Cluster:    cluster,
			Action:     schemas.ActionDelete,
			Sequence:   d.StreamSequence,
			Reason:     "workload deleted on the control plane",
		}
		if err := p.publish(ctx, decided); err != nil {
			return err
		}
	}
	p.mu.Lock()
	delete(p.placement, ref.UID)
	p.mu.Unlock()
	p.Log.Info("unplaced", "workload", ref.Key(), "clusters", targets)
	return nil
}

func deleteDecision(apply *schemas.PlacementDecided, cluster string) *schemas.PlacementDecided {
	return &schemas.PlacementDecided{
		DecisionID: apply.DecisionID + "/move-from/" + cluster,
		Workload:   apply.Workload,
		Cluster:    cluster,
		Action:     schemas.ActionDelete,
		Sequence:   apply.Sequence,
		Reason:     "moved to " + apply.Cluster,
	}
}

func (p *Placer) publish(ctx context.Context, decided *schemas.PlacementDecided) error {
	subject := schemas.DecisionSubject(decided.Cluster, decided.Workload)
	event, err := schemas.NewEvent(schemas.TypePlacementDecided, schemas.SourcePlacer, subject, decided.DecisionID, decided)
	if err != nil {
		return bus.Permanent(err)
	}
	if _, err := p.Publisher.Publish(ctx, subject, event); err != nil {
		return err
	}
	return nil
}
