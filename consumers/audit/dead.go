package audit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// DeadQuery selects the dead letters DeadLetters reads.
type DeadQuery struct {
	// Consumer limits them to one durable consumer's; empty reads every consumer's.
	Consumer string
	// Since is when the dead-letter stream stored the first to read; zero reads them all.
	Since time.Time
}

// DeadLetters reads the dead letters q selects from the dead-letter stream, in the order it stored them. It
// only reads, through an ordered consumer, so an auditor needs no right to publish.
func DeadLetters(ctx context.Context, js jetstream.JetStream, q DeadQuery) ([]bus.DeadLetter, error) {
	filter := schemas.SubjectAllDead
	if q.Consumer != "" {
		filter = schemas.DeadLetterSubject(q.Consumer)
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if !q.Since.IsZero() {
		since := q.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	var letters []bus.DeadLetter
	err := bus.ReadMessages(ctx, js, schemas.StreamDead, cfg, func(msg jetstream.Msg, _ time.Time) {
		letters = append(letters, bus.ReadDeadLetter(msg))
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("audit %s: the server has no such stream: no fleetflow part that keeps dead letters has "+
			"used it yet, or it is not the server fleetflow uses: %w", schemas.StreamDead, err)
	}
	return letters, err
}
