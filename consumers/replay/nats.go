package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// ReadOptions says which part of the streams to read.
type ReadOptions struct {
	// Since starts each stream at its first message stored at or after it; zero reads from the first. A
	// history that does not start at each stream's first sequence cannot be replayed, only exported.
	Since time.Time
	// Partial reads a stream whose first messages aged out; otherwise that is an error wrapping ErrGap.
	Partial bool
}

// ReadStreams returns the history the events and decisions streams hold when it is called. Each stream is
// read by an ordered consumer of its own, the two merged by stored time as they arrive.
func ReadStreams(ctx context.Context, js jetstream.JetStream, opts ReadOptions) (History, error) {
	ctx, cancel := context.WithCancel(ctx)
	h := &streamHistory{cancel: cancel}
	for _, name := range []string{schemas.StreamEvents, schemas.StreamDecisions} {
		stream, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			cancel()
			return nil, fmt.Errorf("history %s: the server has no such stream: no fleetflow part has used it yet, "+
				"or it is not the server fleetflow uses: %w", name, err)
		}
		if err != nil {
			cancel()
			return nil, fmt.Errorf("history %s: %w", name, err)
		}
		if first := stream.CachedInfo().State.FirstSeq; first > 1 && !opts.Partial {
			cancel()
			return nil, fmt.Errorf("history %s starts at sequence %d: the messages before it aged out (the stream's "+
				"--history) or were purged: %w", name, first, ErrGap)
		}
		s := &streamReader{name: name, records: make(chan Record, 1024), done: make(chan error, 1)}
		h.sources = append(h.sources, s)
		cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
		if !opts.Since.IsZero() {
			since := opts.Since
			cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
		}
		go s.read(ctx, js, cfg)
	}
	return h, nil
}

type streamReader struct {
	name    string
	records chan Record
	done    chan error
	// head is the next record, valid when ok; eof once the stream is read.
	head Record
	ok   bool
	eof  bool
}

func (s *streamReader) read(ctx context.Context, js jetstream.JetStream, cfg jetstream.OrderedConsumerConfig) {
	var decodeErr error
	err := bus.ReadMessages(ctx, js, s.name, cfg,
		func(msg jetstream.Msg, stored time.Time) {
			if decodeErr != nil {
				return
			}
			r := Record{Stream: s.name, Subject: msg.Subject(), Stored: stored}
			if meta, err := msg.Metadata(); err == nil {
				r.Sequence = meta.Sequence.Stream
			}
			event, err := bus.Decode(msg.Headers(), msg.Data())
			if err != nil {
				// The placer drops such a message too; it keeps its place in the history, so the history has
				// no gap, as an event saying what it was.
				event = undecodable(r, msg.Data(), err)
			}
			r.Event = event
			select {
			case s.records <- r:
			case <-ctx.Done():
				decodeErr = ctx.Err()
			}
		})
	close(s.records)
	if err == nil {
		err = decodeErr
	}
	s.done <- err
}

// fill makes head the stream's next record, unless the stream is read.
func (s *streamReader) fill(ctx context.Context) error {
	if s.ok || s.eof {
		return nil
	}
	select {
	case r, open := <-s.records:
		if !open {
			s.eof = true
			return <-s.done
		}
		s.head, s.ok = r, true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type streamHistory struct {
	sources []*streamReader
	cancel  context.CancelFunc
}

func (h *streamHistory) Next(ctx context.Context) (Record, error) {
	var next *streamReader
	for _, s := range h.sources {
		if err := s.fill(ctx); err != nil {
			return Record{}, fmt.Errorf("history %s: %w", s.name, err)
		}
		if s.ok && (next == nil || s.head.Stored.Before(next.head.Stored)) {
			next = s
		}
	}
	if next == nil {
		return Record{}, io.EOF
	}
	next.ok = false
	return next.head, nil
}

func (h *streamHistory) Close() error {
	h.cancel()
	return nil
}

// PlacerFloor is the last sequence of the events stream that the placer's durable consumer has acknowledged:
// every event up to it is answered, and its answers stored. 0 when the placer has no consumer yet.
func PlacerFloor(ctx context.Context, js jetstream.JetStream) (uint64, error) {
	stream, cfg := streams.PlacerConsumer()
	consumer, err := js.Consumer(ctx, stream, cfg.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("placer consumer: %w", err)
	}
	info, err := consumer.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("placer consumer: %w", err)
	}
	return info.AckFloor.Stream, nil
}
