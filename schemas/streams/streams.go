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

// The dead-letter stream's bounds. Poison messages are rare, but a producer gone wrong can make thousands,
// each up to the server's max payload (a decision carries its whole object): the stream must not fill the
// server's storage, so past any bound the oldest go.
const (
	DeadLetterMaxAge   = 14 * 24 * time.Hour
	DeadLetterMaxBytes = 1 << 30
	DeadLetterMaxMsgs  = 100_000
)

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
			// Direct gets name the subject in the request's own subject, where NATS permissions can limit a
			// reader to its subjects (internal/natsauth); a plain message get names it in the body.
			AllowDirect: true,
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      opts.History,
			Duplicates:  opts.DuplicateWindow,
			Storage:     storage,
			Replicas:    replicas,
			// The placer's batches are stored all or nothing, fenced by its leadership (schemas.FenceSubject).
			AllowAtomicPublish: true,
		},
		{
			Name:        schemas.StreamDecisions,
			Description: "fleetflow placement decisions, one subject per cluster and workload",
			Subjects:    []string{schemas.SubjectAllDecisions},
			AllowDirect: true, // as the events stream's
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      opts.History,
			Duplicates:  opts.DuplicateWindow,
			Storage:     storage,
			Replicas:    replicas,
			// The placer's batches are stored all or nothing, fenced by its leadership (schemas.FenceSubject).
			AllowAtomicPublish: true,
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
		{
			Name:        schemas.StreamDead,
			Description: "fleetflow dead letters: messages a consumer could not decode, validate or handle, one subject per consumer",
			Subjects:    []string{schemas.SubjectAllDead},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      DeadLetterMaxAge,
			MaxBytes:    DeadLetterMaxBytes,
			MaxMsgs:     DeadLetterMaxMsgs,
			Discard:     jetstream.DiscardOld,
			Duplicates:  opts.DuplicateWindow,
			Storage:     storage,
			Replicas:    replicas,
		},
	}
}

// LeaseBucket is the key-value bucket of leases, where a key whose holder stops renewing it expires after ttl.
// It is replicated and stored as the streams are: on one node of a cluster, its node going down would leave no
// placer able to hold or renew the lease, and placement would stop until that node is back.
func LeaseBucket(opts Options, ttl time.Duration) jetstream.KeyValueConfig {
	storage := jetstream.FileStorage
	if opts.Memory {
		storage = jetstream.MemoryStorage
	}
	return jetstream.KeyValueConfig{Bucket: schemas.LeaseBucket,
		Description: "fleetflow leases: which instance of a singleton part works",
		TTL:         ttl, History: 1, Storage: storage, Replicas: max(opts.Replicas, 1)}
}

// durable is a durable consumer of the whole stream with explicit acknowledgements: an event not acknowledged
// within ackWait is delivered again, up to schemas.MaxDeliver times, with at most 1,000 awaiting acknowledgement.
func durable(name, description string, ackWait time.Duration) jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{Durable: name, Description: description, AckPolicy: jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy, AckWait: ackWait, MaxDeliver: schemas.MaxDeliver, MaxAckPending: 1000}
}

// PlacerConsumer is the placer's durable consumer on its input events.
func PlacerConsumer() (stream string, cfg jetstream.ConsumerConfig) {
	cfg = durable(schemas.ConsumerPlacer, "placer: fleet events to placement decisions", 30*time.Second)
	cfg.FilterSubjects = schemas.PlacerInputs
	return schemas.StreamEvents, cfg
}

// ApplierConsumer is the durable consumer of the applier for cluster.
func ApplierConsumer(cluster string) (stream string, cfg jetstream.ConsumerConfig) {
	cfg = durable(schemas.ApplierConsumerName(cluster), "applier for cluster "+cluster, time.Minute)
	cfg.FilterSubject = schemas.ClusterDecisionsFilter(cluster)
	return schemas.StreamDecisions, cfg
}

// StatusDecisionsConsumer is the status writer's durable consumer of decisions: a Placed verdict rides with
// the Apply that carries it out (PlacementDecided.Verdict) rather than on a verdict subject.
func StatusDecisionsConsumer() (stream string, cfg jetstream.ConsumerConfig) {
	cfg = durable(schemas.ConsumerStatusDecisions,
		"status writer: Placed verdicts carried by Apply decisions, back to the control plane", 30*time.Second)
	cfg.FilterSubject = schemas.SubjectAllDecisions
	return schemas.StreamDecisions, cfg
}

// StatusConsumer is the durable consumer of the status writer, whose replicas share its work: workload
// statuses from the clusters, verdicts of their own, applier outcomes, RIs (their Accepted condition),
// policies (validated into their status) and workload deletions (their WorkloadPlacement goes too). The fleet
// (StatusFleetSubjects) each replica reads for itself.
func StatusConsumer() (stream string, cfg jetstream.ConsumerConfig) {
	cfg = durable(schemas.ConsumerStatus, "status writer: workload status and placement outcomes back to the control plane",
		30*time.Second)
	cfg.FilterSubjects = []string{
		schemas.SubjectEventsPrefix + ".status.>",
		schemas.SubjectEventsPrefix + ".verdict.>",
		schemas.SubjectEventsPrefix + ".placement.>",
		schemas.SubjectEventsPrefix + ".resourceinterface.>",
		schemas.SubjectEventsPrefix + ".policy.>",
		schemas.SubjectEventsPrefix + ".workload.>",
	}
	return schemas.StreamEvents, cfg
}
