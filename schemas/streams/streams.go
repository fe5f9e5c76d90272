package streams

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// Options tune the streams without changing their shape.
type Options struct {
	// History is how long events and decisions are kept for audit and replay.
	History time.Duration
	// DuplicateWindow is how long JetStream remembers Nats-Msg-Ids to drop duplicate publishes.
	DuplicateWindow time.Duration
	// Replicas is the JetStream replication factor (1 for the embedded server).
	Replicas int
	// Storage is file storage unless Memory is set.
	Memory bool
}

// DefaultOptions keeps a week of history and a two-minute dedupe window.
func DefaultOptions() Options {
	return Options{History: 7 * 24 * time.Hour, DuplicateWindow: 2 * time.Minute, Replicas: 1}
}

// Configs is the one definition of fleetflow's streams.
func Configs(opts Options) []jetstream.StreamConfig {
	storage := jetstream.FileStorage
	if opts.Memory {
		storage = jetstream.MemoryStorage
	}
	replicas := max(opts.Replicas, 1)
	return []jetstream.StreamConfig{
		{
			Name:        schemas.StreamEvents,
			Description: "fleetflow input events and applier outcomes (history for audit and replay)",
			Subjects:    []string{schemas.SubjectAllEvents},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      opts.History,
			Duplicates:  opts.DuplicateWindow,
			Storage:     storage,
			Replicas:    replicas,
		},
		{
			Name:        schemas.StreamDecisions,
			Description: "fleetflow placement decisions, one subject per cluster and workload",
			Subjects:    []string{schemas.SubjectAllDecisions},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      opts.History,
			Duplicates:  opts.DuplicateWindow,
			Storage:     storage,
			Replicas:    replicas,
		},
		{
			Name:              schemas.StreamState,
			Description:       "fleetflow last value per subject of events and decisions (rebuilds the placer's view)",
			Retention:         jetstream.LimitsPolicy,
			MaxMsgsPerSubject: 1,
			Storage:           storage,
			Replicas:          replicas,
			Sources: []*jetstream.StreamSource{
				{Name: schemas.StreamEvents, FilterSubject: schemas.SubjectStateEvents, OptStartSeq: 1},
				{Name: schemas.StreamDecisions, OptStartSeq: 1},
			},
		},
	}
}

// PlacerConsumer is the placer's durable consumer on its input events.
func PlacerConsumer() (stream string, cfg jetstream.ConsumerConfig) {
	return schemas.StreamEvents, jetstream.ConsumerConfig{
		Durable:        schemas.ConsumerPlacer,
		Description:    "placer: fleet events to placement decisions",
		FilterSubjects: schemas.PlacerInputs,
		AckPolicy:      jetstream.AckExplicitPolicy,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckWait:        30 * time.Second,
		MaxDeliver:     schemas.MaxDeliver,
		MaxAckPending:  1000,
	}
}

// ApplierConsumer is the durable consumer of the applier for cluster.
func ApplierConsumer(cluster string) (stream string, cfg jetstream.ConsumerConfig) {
	return schemas.StreamDecisions, jetstream.ConsumerConfig{
		Durable:       schemas.ApplierConsumerName(cluster),
		Description:   "applier for cluster " + cluster,
		FilterSubject: schemas.ClusterDecisionsFilter(cluster),
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       time.Minute,
		MaxDeliver:    schemas.MaxDeliver,
		MaxAckPending: 1000,
	}
}

// StatusDecisionsConsumer is the status writer's durable consumer of decisions: a Placed verdict rides with
// the Apply that carries it out (PlacementDecided.Verdict) rather than on a verdict subject.
func StatusDecisionsConsumer() (stream string, cfg jetstream.ConsumerConfig) {
	return schemas.StreamDecisions, jetstream.ConsumerConfig{
		Durable:       schemas.ConsumerStatusDecisions,
		Description:   "status writer: Placed verdicts carried by Apply decisions, back to the control plane",
		FilterSubject: schemas.SubjectAllDecisions,
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    schemas.MaxDeliver,
		MaxAckPending: 1000,
	}
}

// StatusConsumer is the durable consumer of the status writer, whose replicas share its work: workload
// statuses from the clusters, verdicts of their own, applier outcomes, RIs (their Accepted condition) and
// policies (validated into their status). The fleet (StatusFleetSubjects) each replica reads for itself.
func StatusConsumer() (stream string, cfg jetstream.ConsumerConfig) {
	return schemas.StreamEvents, jetstream.ConsumerConfig{
		Durable:     schemas.ConsumerStatus,
		Description: "status writer: workload status and placement outcomes back to the control plane",
		FilterSubjects: []string{
			schemas.SubjectEventsPrefix + ".status.>",
			schemas.SubjectEventsPrefix + ".verdict.>",
			schemas.SubjectEventsPrefix + ".placement.>",
			schemas.SubjectEventsPrefix + ".resourceinterface.>",
			schemas.SubjectEventsPrefix + ".policy.>",
		},
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       30 * time.Second,
		MaxDeliver:    schemas.MaxDeliver,
		MaxAckPending: 1000,
	}
}
