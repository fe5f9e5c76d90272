package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// statePruner removes from the state stream what it keeps of workloads that are gone: deleted on the control
// plane, and the Deletes of their copies stored (consumers.Placer.TakeGone). The stream keeps the last message of
// every subject with no age limit, so without it every workload ever submitted would leave its deletion, last
// verdict, statuses, applier reports and decisions behind, for good, and every restarted placer would read
// through all of them.
//
// A subject's last message is removed only when it is about the very workload that is gone (the same UID), and
// nothing stored after it: a workload created again under the same name keeps everything of its own. The prune
// waits grace after the workload is reported gone, so the reports that follow its Deletes (the appliers'
// outcomes, the last statuses) are removed with the rest; a status that comes later still stays. An applier's
// report that it gave up on a Delete always stays: the copy may have survived, and that report is what makes a
// restarted placer track the workload again and send the Delete once the cluster is back. The applied Delete
// that follows replaces it, and the workload is gone, and pruned, again.
type statePruner struct {
	stream jetstream.Stream
	grace  time.Duration
	log    *slog.Logger

	mu     sync.Mutex
	queue  []goneWorkload // in the order they are due
	signal chan struct{}
}

type goneWorkload struct {
	ref schemas.ObjectRef
	due time.Time
}

// statePruneGrace is how long the pruner waits after a workload is gone.
const statePruneGrace = time.Minute

// maxQueuedPrunes bounds the workloads waiting to be pruned; past it, new ones are left in the stream (and
// logged), which only costs what the pruner exists to save.
const maxQueuedPrunes = 100_000

func newStatePruner(stream jetstream.Stream, grace time.Duration, log *slog.Logger) *statePruner {
	return &statePruner{stream: stream, grace: grace, log: log, signal: make(chan struct{}, 1)}
}

// add queues workloads to prune once the grace period has passed.
func (s *statePruner) add(gone []schemas.ObjectRef) {
	if len(gone) == 0 {
		return
	}
	due := time.Now().Add(s.grace)
	s.mu.Lock()
	if room := maxQueuedPrunes - len(s.queue); len(gone) > room {
		s.log.Warn("too many deleted workloads waiting for their state to be pruned; leaving some in the state stream",
			"stream", schemas.StreamState, "left", len(gone)-max(room, 0))
		gone = gone[:max(room, 0)]
	}
	for _, ref := range gone {
		s.queue = append(s.queue, goneWorkload{ref: ref, due: due})
	}
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// run prunes queued workloads as they come due, until ctx is done.
func (s *statePruner) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := s.takeDue(time.Now())
		for _, ref := range due {
			removed, err := s.prune(ctx, ref)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("state of a deleted workload not pruned", "workload", ref.Key(), "uid", ref.UID, "error", err)
				continue
			}
			s.log.Debug("pruned the state of a deleted workload", "workload", ref.Key(), "uid", ref.UID, "messages", removed)
		}
		if wait <= 0 {
			wait = time.Hour
		}
		// Reset drops a tick the timer sent but nobody received (Go 1.23 timers).
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.signal:
		case <-timer.C:
		}
	}
}

// takeDue removes and returns the workloads due by now, and how long until the next one is due (0: none queued).
func (s *statePruner) takeDue(now time.Time) ([]schemas.ObjectRef, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.queue) && !s.queue[n].due.After(now) {
		n++
	}
	due := make([]schemas.ObjectRef, n)
	for i := range n {
		due[i] = s.queue[i].ref
	}
	s.queue = append(s.queue[:0], s.queue[n:]...)
	if len(s.queue) == 0 {
		return due, 0
	}
	return due, s.queue[0].due.Sub(now)
}

// prune removes, subject by subject, the state stream's last message about ref when it is about ref's UID, and
// returns how many it removed.
func (s *statePruner) prune(ctx context.Context, ref schemas.ObjectRef) (int, error) {
	if ref.UID == "" {
		return 0, nil // nothing tells this workload's messages from those of another under its name
	}
	// The deletion goes last: were the prune cut short, a rebuild still finds the workload deleted, drops it
	// and reports it gone again, instead of finding decisions of a workload it knows nothing of.
	deletion := schemas.WorkloadSubject(ref)
	filters := slices.DeleteFunc(schemas.WorkloadStateFilters(ref), func(f string) bool { return f == deletion })
	removed := 0
	for _, filter := range append(filters, deletion) {
		info, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return removed, fmt.Errorf("list %s in %s: %w", filter, schemas.StreamState, err)
		}
		for subject := range info.State.Subjects {
			msg, err := s.stream.GetLastMsgForSubject(ctx, subject)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				return removed, fmt.Errorf("read the last message of %s in %s: %w", subject, schemas.StreamState, err)
			}
			if !aboutGoneWorkload(msg, ref.UID) {
				continue
			}
			// Up to that message only: one stored since belongs to whatever came after.
			if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(msg.Sequence+1)); err != nil {
				return removed, fmt.Errorf("purge %s in %s: %w", subject, schemas.StreamState, err)
			}
			removed++
		}
	}
	return removed, nil
}

// aboutGoneWorkload tells whether a state message is about the workload with uid and may go with it: its
// deletion (never a change: a change means the workload is there), its verdicts and analyses, its statuses,
// the appliers' reports of what they did (not of a Delete they gave up on) and the placer's decisions.
func aboutGoneWorkload(msg *jetstream.RawStreamMsg, uid string) bool {
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		return false
	}
	payload, err := schemas.DecodePayload(event)
	if err != nil {
		return false
	}
	var about schemas.ObjectRef
	switch p := payload.(type) {
	case *schemas.ObjectDeleted:
		about = p.Workload
	case *schemas.PlacementVerdict:
		about = p.Workload
	case *schemas.WorkloadAnalyzed:
		about = p.Workload
	case *schemas.WorkloadStatus:
		about = p.Workload
	case *schemas.PlacementApplied:
		about = p.Workload
	case *schemas.PlacementDecided:
		about = p.Workload
	default:
		return false
	}
	return about.UID == uid
}
