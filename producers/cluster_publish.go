package producers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// statePublisher publishes the latest state of one thing per subject (a node, a workload's status, the
// installed APIs) with content-derived ids.
//
// A content id alone has one flaw: a state that returns to a value published earlier (A, B, A) within the
// stream's duplicate window gets the id of the first A, and JetStream drops it, leaving B as the last
// stored state. JetStream's duplicate ack names the sequence of the original message, so when that
// sequence is older than the last one this publisher stored or saw acknowledged on the subject, the state
// is republished with the id qualified by that sequence. Replicas that saw the same history compute the
// same qualified id, so they still store it once. A publisher that knows nothing of the subject yet (started
// since) reads the last sequence on the subject from the stream, and the last one on registration's.
//
// registration is the subject of the cluster's Cluster object (schemas.ClusterSpecSubject). A Cluster deleted
// and registered again makes the placer drop what the cluster reported before the deletion (its installed
// APIs, its nodes) and wait for its producer, started again, to report them anew: the same content, which
// JetStream dropped as a duplicate while its first copy was in the duplicate window. The cluster then served
// no kind and had no nodes, for the placer, until the next StateResync (10 minutes). A state whose stored copy
// predates the Cluster's last change is stored again after it.
type statePublisher struct {
	publisher    *bus.Publisher
	source       string
	log          *slog.Logger
	registration string

	mu   sync.Mutex
	last map[string]*publishedState // by subject
}

type publishedState struct {
	id  string // "" after forgetContent: publish again even if unchanged
	seq uint64 // stream sequence of the state last acknowledged on the subject
	// goneAt is when the thing was reported deleted; the entry is kept a while after, because the same
	// identity may come back (a workload placed here again) with content published before.
	goneAt time.Time
}

// publish sends payload unless the same content was the last one published on subject. kind and identity
// name the id (schemas.ContentID); the content hashed is the payload's JSON, which encoding/json writes
// with sorted map keys, so equal states hash equally in every replica.
func (s *statePublisher) publish(ctx context.Context, eventType, subject, kind, identity string, payload schemas.Payload) error {
	content, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode %s payload for %s: %w", eventType, subject, err)
	}
	id := schemas.ContentID(kind, identity, content)
	s.mu.Lock()
	last := s.last[subject]
	var lastSeq uint64
	if last != nil {
		if last.id == id {
			s.mu.Unlock()
			return nil
		}
		lastSeq = last.seq
	}
	s.mu.Unlock()

	seq, err := s.send(ctx, eventType, subject, id, payload, lastSeq)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.last[subject] = &publishedState{id: id, seq: max(seq, lastSeq)}
	s.mu.Unlock()
	return nil
}

func (s *statePublisher) send(ctx context.Context, eventType, subject, id string, payload schemas.Payload, lastSeq uint64) (uint64, error) {
	event, err := codec.NewEvent(eventType, s.source, subject, id, payload)
	if err != nil {
		return 0, err
	}
	ack, err := s.publisher.Publish(ctx, subject, event)
	if err != nil {
		return 0, err
	}
	if ack.Duplicate && lastSeq == 0 {
		// This publisher knows nothing of the subject (it started since, after a restart within the duplicate
		// window, say): the stream tells whether a later state was stored after the original.
		stored, err := s.publisher.LastStored(ctx, schemas.StreamEvents, subject)
		if err != nil {
			return 0, err
		}
		lastSeq = stored
		if s.registration != "" {
			registered, err := s.publisher.LastStored(ctx, schemas.StreamEvents, s.registration)
			if err != nil {
				return 0, err
			}
			lastSeq = max(lastSeq, registered)
		}
	}
	if ack.Duplicate && ack.Sequence < lastSeq {
		// The stored copy predates a later state on this subject: store this state again, after it.
		qualified := id + "/after/" + strconv.FormatUint(lastSeq, 10)
		s.log.Debug("state returned to an earlier value; republishing it after the later one",
			"subject", subject, "id", qualified, "original_seq", ack.Sequence, "later_seq", lastSeq)
		event.SetID(qualified)
		if ack, err = s.publisher.Publish(ctx, subject, event); err != nil {
			return 0, err
		}
	}
	s.log.Debug("published", "event_type", eventType, "subject", subject, "id", event.ID(),
		"seq", ack.Sequence, "duplicate", ack.Duplicate)
	return ack.Sequence, nil
}

// forgetContent makes the next publish of every subject go to JetStream even when unchanged, keeping the
// sequences. A republish outside the duplicate window is stored again, which repairs a subject whose last
// stored state is stale. Subjects reported gone before goneBefore are dropped entirely.
func (s *statePublisher) forgetContent(goneBefore time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for subject, st := range s.last {
		if !st.goneAt.IsZero() {
			if st.goneAt.Before(goneBefore) {
				delete(s.last, subject)
			}
			continue
		}
		st.id = ""
	}
}

// markGone records that the last state published on subject said the thing is gone.
func (s *statePublisher) markGone(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.last[subject]; st != nil {
		st.goneAt = time.Now()
	}
}
