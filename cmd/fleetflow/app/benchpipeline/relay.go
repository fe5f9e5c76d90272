package benchpipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// Bus floors: what a relay in the placer's place publishes for each workload event (Config.BusFloor).
const (
	// FloorVerdictAndDecision publishes what the placer publishes for a placed workload: a verdict, then a
	// decision.
	FloorVerdictAndDecision = "verdict"
	// FloorDecision publishes the decision alone, as if a placed workload's verdict rode on its decision.
	FloorDecision = "decision"
)

// relay takes the placer's consumer and places nothing: for each workload event it publishes a Placed
// verdict with no reasons and an Apply carrying the event's object, on the placer's subjects and through
// the same publisher, consume loop and flush. What it sustains is what the streams alone allow, so the
// bench's ratio against it says how much of the gap to raw publishing is the placer's own work.
type relay struct {
	publisher   *bus.Publisher
	withVerdict bool
	clusters    int
	outstanding []jetstream.PubAckFuture
}

func runRelay(ctx context.Context, b *app.Bus, floor string, clusters int, log *slog.Logger) error {
	stream, consumerCfg := streams.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(ctx, b.JetStream, stream, consumerCfg)
	if err != nil {
		return err
	}
	r := &relay{publisher: b.Publisher, withVerdict: floor == FloorVerdictAndDecision, clusters: clusters}
	loop := &bus.ConsumeLoop{Consumer: consumer, Handle: r.handle, Flush: r.flush, Log: log}
	return loop.Run(ctx)
}

func (r *relay) handle(_ context.Context, d bus.Delivery) error {
	changed, ok := d.Payload.(*schemas.ObjectChanged)
	if !ok || d.Event.Type() != schemas.TypeWorkloadChanged {
		return nil // the fleet: nothing to relay
	}
	ref := changed.Ref()
	cluster := clusterName(int(d.StreamSequence % uint64(r.clusters)))
	seq := strconv.FormatUint(d.StreamSequence, 10)
	if r.withVerdict {
		v := &schemas.PlacementVerdict{Workload: ref, Sequence: d.StreamSequence, Status: schemas.VerdictPlaced,
			Policy: "relay", Clusters: []string{cluster}}
		if err := r.publish(schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "verdict/"+ref.UID+"/"+seq, v); err != nil {
			return err
		}
	}
	decision := &schemas.PlacementDecided{DecisionID: ref.UID + "/" + seq + "/Apply/" + cluster, Workload: ref,
		Cluster: cluster, Action: schemas.ActionApply, Sequence: d.StreamSequence, Epoch: "relay",
		ObjectJSON: changed.ObjectJSON, Policy: "relay", Reason: "relayed by the bench's bus floor"}
	return r.publish(schemas.TypePlacementDecided, schemas.DecisionSubject(cluster, ref), decision.DecisionID, decision)
}

func (r *relay) publish(eventType, subject, id string, payload schemas.Payload) error {
	event, err := codec.NewEvent(eventType, schemas.SourcePlacer, subject, id, payload)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	future, err := r.publisher.PublishAsync(subject, event)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	r.outstanding = append(r.outstanding, future)
	return nil
}

// flush waits until everything published since the last flush is stored, as the placer's flush does.
func (r *relay) flush(ctx context.Context) error {
	var errs []error
	for _, f := range r.outstanding {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = append(errs, fmt.Errorf("relay: publish to %s: %w", f.Msg().Subject, err))
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.outstanding = r.outstanding[:0]
	return errors.Join(errs...)
}
