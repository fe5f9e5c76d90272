package streams

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/schemas"
)

// Every durable consumer reads its stream from the start with explicit acknowledgements and the shared
// redelivery bound, on the subjects of its component.
func TestDurableConsumers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stream   string
		durable  string
		filters  []string
		ackWait  time.Duration
		consumer func() (string, jetstream.ConsumerConfig)
	}{
		{name: "placer", consumer: PlacerConsumer, stream: schemas.StreamEvents, durable: schemas.ConsumerPlacer,
			filters: schemas.PlacerInputs, ackWait: 30 * time.Second},
		{name: "applier", consumer: func() (string, jetstream.ConsumerConfig) { return ApplierConsumer("east") },
			stream: schemas.StreamDecisions, durable: schemas.ApplierConsumerName("east"),
			filters: []string{schemas.ClusterDecisionsFilter("east")}, ackWait: time.Minute},
		{name: "status decisions", consumer: StatusDecisionsConsumer, stream: schemas.StreamDecisions,
			durable: schemas.ConsumerStatusDecisions, filters: []string{schemas.SubjectAllDecisions}, ackWait: 30 * time.Second},
		{name: "status", consumer: StatusConsumer, stream: schemas.StreamEvents, durable: schemas.ConsumerStatus,
			filters: []string{schemas.SubjectEventsPrefix + ".status.>", schemas.SubjectEventsPrefix + ".verdict.>",
				schemas.SubjectEventsPrefix + ".placement.>", schemas.SubjectEventsPrefix + ".resourceinterface.>",
				schemas.SubjectEventsPrefix + ".policy.>", schemas.SubjectEventsPrefix + ".workload.>"}, ackWait: 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stream, cfg := tc.consumer()
			filters := cfg.FilterSubjects
			if cfg.FilterSubject != "" {
				filters = append(filters, cfg.FilterSubject)
			}
			switch {
			case stream != tc.stream:
				t.Errorf("stream %s, want %s", stream, tc.stream)
			case cfg.Durable != tc.durable || cfg.Description == "":
				t.Errorf("durable %q (%q), want %q with a description", cfg.Durable, cfg.Description, tc.durable)
			case !slices.Equal(filters, tc.filters):
				t.Errorf("filters %v, want %v", filters, tc.filters)
			case cfg.AckPolicy != jetstream.AckExplicitPolicy || cfg.DeliverPolicy != jetstream.DeliverAllPolicy:
				t.Errorf("ack policy %v, deliver policy %v, want explicit acks from the start", cfg.AckPolicy, cfg.DeliverPolicy)
			case cfg.AckWait != tc.ackWait || cfg.MaxDeliver != schemas.MaxDeliver || cfg.MaxAckPending != 1000:
				t.Errorf("ack wait %s, max deliver %d, max ack pending %d; want %s, %d, 1000", cfg.AckWait, cfg.MaxDeliver,
					cfg.MaxAckPending, tc.ackWait, schemas.MaxDeliver)
			}
		})
	}
}

// The dead-letter stream is bounded in age, bytes and messages, dropping the oldest first, takes the replicas
// and storage of the others, and shares no subject with them.
func TestDeadLetterStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{name: "defaults", opts: DefaultOptions()},
		{name: "three replicas in memory", opts: Options{History: time.Hour, DuplicateWindow: time.Minute, Replicas: 3, Memory: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			configs := Configs(tc.opts)
			i := slices.IndexFunc(configs, func(c jetstream.StreamConfig) bool { return c.Name == schemas.StreamDead })
			if i < 0 {
				t.Fatalf("no %s among %d streams", schemas.StreamDead, len(configs))
			}
			dead := configs[i]
			switch {
			case !slices.Equal(dead.Subjects, []string{"dead.>"}):
				t.Errorf("subjects %v, want dead.>", dead.Subjects)
			case dead.MaxAge != 14*24*time.Hour || dead.MaxBytes <= 0 || dead.MaxMsgs <= 0 || dead.Discard != jetstream.DiscardOld:
				t.Errorf("max age %s, bytes %d, messages %d, discard %v; want 14 days, both bounded, the oldest dropped",
					dead.MaxAge, dead.MaxBytes, dead.MaxMsgs, dead.Discard)
			case dead.Duplicates != tc.opts.DuplicateWindow || dead.Duplicates == 0:
				t.Errorf("duplicate window %s, want %s", dead.Duplicates, tc.opts.DuplicateWindow)
			}
			for _, other := range configs {
				if other.Replicas != dead.Replicas || other.Storage != dead.Storage {
					t.Errorf("%s has %d replicas on %v, %s %d on %v", other.Name, other.Replicas, other.Storage,
						dead.Name, dead.Replicas, dead.Storage)
				}
				for _, s := range other.Subjects {
					if other.Name != dead.Name && (schemas.SubjectMatches(s, "dead.x") || schemas.SubjectMatches("dead.>", s)) {
						t.Errorf("%s's subject %s overlaps the dead letters'", other.Name, s)
					}
				}
			}
		})
	}
}

// The lease bucket is replicated and stored as the streams are, so a cluster's node going down leaves the lease
// to the others.
func TestLeaseBucketFollowsTheStreams(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		replicas int
		storage  jetstream.StorageType
	}{
		{name: "defaults", opts: DefaultOptions(), replicas: 1, storage: jetstream.FileStorage},
		{name: "three replicas", opts: Options{Replicas: 3}, replicas: 3, storage: jetstream.FileStorage},
		{name: "in memory", opts: Options{Replicas: 5, Memory: true}, replicas: 5, storage: jetstream.MemoryStorage},
		{name: "zero replicas", opts: Options{}, replicas: 1, storage: jetstream.FileStorage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := LeaseBucket(tc.opts, 15*time.Second)
			if cfg.Bucket != schemas.LeaseBucket || cfg.TTL != 15*time.Second || cfg.History != 1 {
				t.Errorf("bucket %q, TTL %s, history %d; want %s, 15s, 1", cfg.Bucket, cfg.TTL, cfg.History, schemas.LeaseBucket)
			}
			if cfg.Replicas != tc.replicas || cfg.Storage != tc.storage {
				t.Errorf("%d replicas on %v, want %d on %v", cfg.Replicas, cfg.Storage, tc.replicas, tc.storage)
			}
		})
	}
}
