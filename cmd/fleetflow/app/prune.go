package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// statePruner removes from the state stream what it keeps of workloads that are gone: deleted on the control
// plane, and the Deletes of their copies stored (placer.Placer.TakeGone). The stream keeps the last message of
// every subject with no age limit, so without it every workload ever submitted would leave its deletion, last
// verdict, statuses, applier reports and decisions behind, for good, and every restarted placer would read
// through all of them. It removes the deletions of nodes too, which a cluster autoscaler leaves one of for every
// node it ever removed, and what the stream holds of a deleted cluster, stored before its deletion or after
// (lifecycle.Controller.TakeGoneFleet).
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

	mu    sync.Mutex
	queue []pruneTarget // in the order they are due
	// queuedClusters names the clusters queued: a deleted cluster reported again before its prune ran (what
	// it sent after its deletion) is pruned once, and that prune takes what the placer saw since too.
	queuedClusters map[string]bool
	signal         chan struct{}
}

// pruneTarget is a workload, a node or a cluster that is gone; one of the three is set.
type pruneTarget struct {
	workload *schemas.ObjectRef
	node     *schemas.NodeDeleted
	cluster  string
	due      time.Time
}

// statePruneGrace is how long the pruner waits after a workload is gone.
const statePruneGrace = time.Minute

// maxQueuedPrunes bounds the workloads waiting to be pruned; past it, new ones are left in the stream (and
// logged), which only costs what the pruner exists to save.
const maxQueuedPrunes = 100_000

func newStatePruner(stream jetstream.Stream, grace time.Duration, log *slog.Logger) *statePruner {
	return &statePruner{stream: stream, grace: grace, log: log, queuedClusters: map[string]bool{}, signal: make(chan struct{}, 1)}
}

// add queues workloads, nodes and clusters to prune once the grace period has passed.
func (s *statePruner) add(workloads []schemas.ObjectRef, fleet lifecycle.GoneFleet) {
	n := len(workloads) + len(fleet.Nodes) + len(fleet.Clusters)
	if n == 0 {
		return
	}
	due := time.Now().Add(s.grace)
	targets := make([]pruneTarget, 0, n)
	for i := range workloads {
		targets = append(targets, pruneTarget{workload: &workloads[i], due: due})
	}
	for i := range fleet.Nodes {
		targets = append(targets, pruneTarget{node: &fleet.Nodes[i], due: due})
	}
	s.mu.Lock()
	for _, c := range fleet.Clusters {
		if !s.queuedClusters[c] {
			targets = append(targets, pruneTarget{cluster: c, due: due})
		}
	}
	if room := maxQueuedPrunes - len(s.queue); len(targets) > room {
		s.log.Warn("too many deleted workloads, nodes and clusters waiting for their state to be pruned; leaving some in the state stream",
			"stream", schemas.StreamState, "left", len(targets)-max(room, 0))
		targets = targets[:max(room, 0)]
	}
	for _, target := range targets {
		if target.cluster != "" {
			s.queuedClusters[target.cluster] = true
		}
	}
	s.queue = append(s.queue, targets...)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// run prunes the queued workloads, nodes and clusters as they come due, until ctx is done.
func (s *statePruner) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		due, wait := s.takeDue(time.Now())
		for _, target := range due {
			if ref := target.workload; ref != nil {
				removed, err := s.prune(ctx, *ref)
				if err != nil && ctx.Err() == nil {
					s.log.Warn("state of a deleted workload not pruned", "workload", ref.Key(), "uid", ref.UID, "error", err)
				} else if err == nil {
					s.log.Debug("pruned the state of a deleted workload", "workload", ref.Key(), "uid", ref.UID, "messages", removed)
				}
			}
			if n := target.node; n != nil {
				if _, err := s.pruneNode(ctx, *n); err != nil && ctx.Err() == nil {
					s.log.Warn("deletion of a node not pruned", "cluster", n.Cluster, "node", n.Name, "error", err)
				}
			}
			if c := target.cluster; c != "" {
				if _, err := s.pruneCluster(ctx, c); err != nil && ctx.Err() == nil {
					s.log.Warn("state of a deleted cluster not pruned", "cluster", c, "error", err)
				}
			}
			if ctx.Err() != nil {
				return
			}
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

// takeDue removes and returns the targets due by now, and how long until the next one is due (0: none queued).
func (s *statePruner) takeDue(now time.Time) ([]pruneTarget, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for n < len(s.queue) && !s.queue[n].due.After(now) {
		n++
	}
	due := slices.Clone(s.queue[:n])
	s.queue = append(s.queue[:0], s.queue[n:]...)
	for _, target := range due {
		delete(s.queuedClusters, target.cluster)
	}
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
			pruned, err := s.pruneLast(ctx, subject, func(msg *jetstream.RawStreamMsg) bool { return aboutGoneWorkload(msg, ref.UID) })
			if err != nil {
				return removed, err
			}
			if pruned {
				removed++
			}
		}
	}
	return removed, nil
}

// pruneNode removes a node's deletion from the state stream when it is still the last message on the node's
// subject, and reports whether it did. A node state stored since means a node of that name came back.
func (s *statePruner) pruneNode(ctx context.Context, n schemas.NodeDeleted) (bool, error) {
	return s.pruneLast(ctx, schemas.NodeSubject(n.Cluster, n.Name), func(msg *jetstream.RawStreamMsg) bool {
		return eventType(msg) == schemas.TypeNodeDeleted
	})
}

// pruneCluster removes from the state stream what it holds of a deleted cluster, and then the deletion, while no
// Cluster of that name is registered again (the last message on the cluster's spec subject is the deletion, or
// there is none once an earlier prune removed it), and reports whether it did. It takes what was stored before
// the deletion and after it: the heartbeats, APIs and nodes a producer sent until it stopped, the reports of
// the Deletes its applier carried out, the Deletes the placer sent the cluster's copies as it failed them over.
// Kept, they stayed for good, and every rebuild found a deleted cluster beating. Only what the stream held when
// the prune began goes: a Cluster registered again meanwhile keeps everything stored after its registration.
func (s *statePruner) pruneCluster(ctx context.Context, cluster string) (bool, error) {
	spec := schemas.ClusterSpecSubject(cluster)
	last, err := bus.LastMessage(ctx, s.stream, spec)
	if err != nil || (last != nil && eventType(last) != schemas.TypeClusterDeleted) {
		return false, err
	}
	info, err := s.stream.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("prune cluster %s: %w", cluster, err)
	}
	through := info.State.LastSeq
	aspects := schemas.ClusterAspectsFilter(cluster)
	for _, filter := range schemas.ClusterStateFilters(cluster) {
		if filter != aspects {
			if err := s.purgeBefore(ctx, filter, through+1); err != nil {
				return false, err
			}
			continue
		}
		// The deletion goes last: were the prune cut short, a rebuild still finds the cluster deleted, and the
		// placer reports it gone again.
		aspectsInfo, err := s.stream.Info(ctx, jetstream.WithSubjectFilter(aspects))
		if err != nil {
			return false, fmt.Errorf("list %s in %s: %w", aspects, schemas.StreamState, err)
		}
		for subject := range aspectsInfo.State.Subjects {
			if subject == spec {
				continue
			}
			if err := s.purgeBefore(ctx, subject, through+1); err != nil {
				return false, err
			}
		}
	}
	if last != nil {
		if err := s.purgeBefore(ctx, spec, last.Sequence+1); err != nil {
			return false, err
		}
	}
	return true, nil
}

// pruneLast removes subject's last message when gone says it may go, and nothing stored after it: a message
// stored since belongs to whatever came after. It reports whether it removed the message.
func (s *statePruner) pruneLast(ctx context.Context, subject string, gone func(*jetstream.RawStreamMsg) bool) (bool, error) {
	msg, err := bus.LastMessage(ctx, s.stream, subject)
	if err != nil || msg == nil || !gone(msg) {
		return false, err
	}
	if err := s.purgeBefore(ctx, subject, msg.Sequence+1); err != nil {
		return false, err
	}
	return true, nil
}

// purgeBefore removes the state stream's messages on the subjects filter selects that were stored before seq.
func (s *statePruner) purgeBefore(ctx context.Context, filter string, seq uint64) error {
	if seq <= 1 {
		// Nothing is stored before the first sequence, and servers before 2.15 purged the whole filter for 1.
		return nil
	}
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(filter), jetstream.WithPurgeSequence(seq)); err != nil {
		return fmt.Errorf("purge %s in %s: %w", filter, schemas.StreamState, err)
	}
	return nil
}

// eventType is the CloudEvents type of a stored message, "" when it is no CloudEvent.
func eventType(msg *jetstream.RawStreamMsg) string {
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		return ""
	}
	return event.Type()
}

// aboutGoneWorkload tells whether a state message is about the workload with uid and may go with it: its
// deletion (never a change: a change means the workload is there), its verdicts and analyses, its statuses,
// the appliers' reports of what they did and of an Apply they gave up on (not of a Delete they gave up on:
// the copy may have survived), and the placer's Deletes. An Apply left as the last decision for a cluster
// means the Delete of that copy was never stored (a placer stopped in between, and its successor rebuilt
// from a state stream that had not copied the Apply yet): kept, it makes the next rebuild send the Delete.
func aboutGoneWorkload(msg *jetstream.RawStreamMsg, uid string) bool {
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		return false
	}
	payload, err := codec.DecodePayload(event)
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
	case *schemas.PlacementFailed:
		if p.Action == schemas.ActionDelete {
			return false
		}
		about = p.Workload
	case *schemas.PlacementDecided:
		if p.Action != schemas.ActionDelete {
			return false
		}
		about = p.Workload
	default:
		return false
	}
	return about.UID == uid
}
