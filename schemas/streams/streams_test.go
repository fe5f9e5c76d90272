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
				schemas.SubjectEventsPrefix + ".policy.>"}, ackWait: 30 * time.Second},
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
