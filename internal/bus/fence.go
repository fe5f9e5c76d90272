package bus

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// ErrFenced is what a fenced publish fails with once another placer recorded its leadership: nothing of it was
// stored, and its placer must stop deciding.
var ErrFenced = errors.New("fenced out: another placer took the lease")

// fencedStreams are the streams a placer publishes to.
var fencedStreams = []string{schemas.StreamDecisions, schemas.StreamEvents}

const (
	// maxFencedBatch bounds the messages of one atomic batch, under the server's default limit (1,000).
	maxFencedBatch = 500
	// maxFencedBatchBytes bounds the data of one atomic batch, which the stream leader holds until it commits.
	maxFencedBatchBytes = 4 << 20
)

// errCodeBatchDuplicate is the server's error code for an atomic batch holding a message id it stored already.
const errCodeBatchDuplicate jetstream.ErrorCode = 10201

// Fence is a leader's hold on the streams it publishes to: the sequence of its PlacerLeader record on each
// stream's fence subject (schemas.FenceSubject). Its publishes are stored only while those records are the
// last there.
type Fence struct {
	js   jetstream.JetStream
	name string            // the leadership's, stamped on what it publishes (schemas.HeaderPlacer)
	seqs map[string]uint64 // by stream
	// mu serializes the publishes to each stream: a replicated stream refuses a publish whose fence check
	// overlaps another's in flight, which would read as being fenced out.
	mu map[string]*sync.Mutex
}

// TakeFence appends leader's record to the fence subject of each stream the placer publishes to (ReadFence, then
// FenceRead.Take).
func TakeFence(ctx context.Context, js jetstream.JetStream, leader *schemas.PlacerLeader) (*Fence, error) {
	read, err := ReadFence(ctx, js)
	if err != nil {
		return nil, err
	}
	return read.Take(ctx, leader)
}

// FenceRead is where the fence subjects were when read: the sequence of the last record on each.
type FenceRead struct {
	js   jetstream.JetStream
	last map[string]uint64 // by stream
}

// ReadFence reads where the fence subjects are.
func ReadFence(ctx context.Context, js jetstream.JetStream) (*FenceRead, error) {
	r := &FenceRead{js: js, last: map[string]uint64{}}
	for _, stream := range fencedStreams {
		last, err := NewPublisher(js).LastStored(ctx, stream, schemas.FenceSubject(stream))
		if err != nil {
			return nil, fmt.Errorf("fence of %s: %w", stream, err)
		}
		r.last[stream] = last
	}
	return r, nil
}

// Take appends leader's record to each fence subject, expecting the record read to be the last there still: a
// placer that paused between reading and taking cannot fence out one that took the lease over meanwhile.
func (r *FenceRead) Take(ctx context.Context, leader *schemas.PlacerLeader) (*Fence, error) {
	f := &Fence{js: r.js, name: leader.Placer, seqs: map[string]uint64{}, mu: map[string]*sync.Mutex{}}
	for _, stream := range fencedStreams {
		subject, last := schemas.FenceSubject(stream), r.last[stream]
		id := "placer-leader/" + leader.Placer + "/" + strconv.FormatUint(last, 10)
		e, err := codec.NewEvent(schemas.TypePlacerLeader, schemas.SourcePlacer, subject, id, leader)
		if err != nil {
			return nil, err
		}
		msg, err := EncodeWithID(subject, e)
		if err != nil {
			return nil, err
		}
		msg.Header.Set(schemas.HeaderPlacer, leader.Placer)
		ack, err := r.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last))
		if isFenced(err) {
			return nil, fmt.Errorf("record leadership on %s: %w", subject, ErrFenced)
		}
		if err != nil {
			return nil, fmt.Errorf("record leadership on %s: %w", subject, err)
		}
		f.seqs[stream], f.mu[stream] = ack.Sequence, &sync.Mutex{}
	}
	return f, nil
}

// PublishMsgs stores msgs (each with its Nats-Msg-Id header set), stamped with the leadership's name, in order
// within each stream and all or nothing per atomic batch, while the fence holds; it fails with ErrFenced,
// storing nothing more, once it does not. A batch holding a message stored already (a batch sent again) is sent
// one message at a time, each fenced, so the stored ones are dropped as duplicates and the rest stored.
func (f *Fence) PublishMsgs(ctx context.Context, msgs []*nats.Msg) error {
	byStream := map[string][]*nats.Msg{}
	for _, m := range msgs {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(schemas.HeaderPlacer, f.name)
		stream := schemas.StreamEvents
		if strings.HasPrefix(m.Subject, schemas.SubjectDecisionsRoot+".") {
			stream = schemas.StreamDecisions
		}
		byStream[stream] = append(byStream[stream], m)
	}
	// The streams' batches go side by side: each waits for its stream leader's commit.
	var wg sync.WaitGroup
	errs := make([]error, len(fencedStreams))
	for i, stream := range fencedStreams {
		if len(byStream[stream]) == 0 {
			continue
		}
		wg.Go(func() {
			f.mu[stream].Lock()
			defer f.mu[stream].Unlock()
			for _, chunk := range chunks(byStream[stream]) {
				if errs[i] = f.publishChunk(ctx, stream, chunk); errs[i] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// chunks splits msgs into batches within maxFencedBatch messages and maxFencedBatchBytes.
func chunks(msgs []*nats.Msg) [][]*nats.Msg {
	var out [][]*nats.Msg
	start, bytes := 0, 0
	for i, m := range msgs {
		if i > start && (i-start == maxFencedBatch || bytes+len(m.Data) > maxFencedBatchBytes) {
			out = append(out, msgs[start:i])
			start, bytes = i, 0
		}
		bytes += len(m.Data)
	}
	if start < len(msgs) {
		out = append(out, msgs[start:])
	}
	return out
}

func (f *Fence) publishChunk(ctx context.Context, stream string, chunk []*nats.Msg) error {
	subject, seq := schemas.FenceSubject(stream), f.seqs[stream]
	batch := append([]*nats.Msg{withFence(chunk[0], subject, seq)}, chunk[1:]...)
	// Sent again while no stream leader answers: a batch stored after all makes the next attempt a duplicate.
	err := RetryTransient(ctx, func() error {
		_, err := jetstreamext.PublishMsgBatch(ctx, f.js, batch)
		return err
	})
	switch {
	case err == nil:
		return nil
	case isFenced(err):
		return fmt.Errorf("publish %d messages to %s: %w", len(chunk), stream, ErrFenced)
	case hasCode(err, errCodeBatchDuplicate):
		return f.publishEach(ctx, chunk, subject, seq)
	default:
		return fmt.Errorf("publish %d messages to %s: %w", len(chunk), stream, err)
	}
}

// publishEach stores msgs one at a time, each fenced.
func (f *Fence) publishEach(ctx context.Context, msgs []*nats.Msg, subject string, seq uint64) error {
	for _, m := range msgs {
		err := RetryTransient(ctx, func() error {
			_, err := f.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequenceForSubject(seq, subject))
			return err
		})
		if isFenced(err) {
			return fmt.Errorf("publish to %s: %w", m.Subject, ErrFenced)
		}
		if err != nil {
			return fmt.Errorf("publish to %s: %w", m.Subject, err)
		}
	}
	return nil
}

// withFence is a copy of m that the stream stores only while the last message on subject is at seq.
func withFence(m *nats.Msg, subject string, seq uint64) *nats.Msg {
	header := nats.Header{}
	for k, v := range m.Header {
		header[k] = v
	}
	header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
	header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, subject)
	return &nats.Msg{Subject: m.Subject, Header: header, Data: m.Data}
}

// isFenced tells a publish refused because the fence subject moved on. Replicated streams refuse with a
// constant code of their own.
func isFenced(err error) bool {
	return hasCode(err, jetstream.JSErrCodeStreamWrongLastSequence) || hasCode(err, jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

func hasCode(err error, code jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == code
}
