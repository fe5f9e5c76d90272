package ui

import (
	"context"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/placement/explain"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/schemas"
)

// Streams answers the pages that read the recorded history rather than the read model: a workload's
// explanation and audit trail, and the what-if. Each is what the matching command prints.
type Streams interface {
	// Explain is `fleetflow explain KIND/NAMESPACE/NAME`: the history replayed, and the workload explained on
	// the fleet view it leaves.
	Explain(ctx context.Context, workload string) (*explain.Explanation, error)
	// Trail is `fleetflow audit tail --workload`: every event about the workload, the last limit of them.
	Trail(ctx context.Context, workload *audit.WorkloadSelector, limit int) ([]audit.AuditRecord, error)
	// WhatIf is `fleetflow replay --policy`.
	WhatIf(ctx context.Context, w replay.WhatIf) (*replay.WhatIfReport, error)
}

// NATSStreams reads the history from JetStream.
type NATSStreams struct {
	JS jetstream.JetStream

	// replays runs one replay at a time: each reads the whole history into a placement lifecycle.
	replays sync.Mutex
	// view is the fleet view the last explain replay left, at the streams' ends then.
	view     *state.Snapshot
	viewEnds [2]uint64
}

// ends are the last sequences of the events and decisions streams.
func (n *NATSStreams) ends(ctx context.Context) ([2]uint64, error) {
	var out [2]uint64
	for i, name := range []string{schemas.StreamEvents, schemas.StreamDecisions} {
		stream, err := n.JS.Stream(ctx, name)
		if err != nil {
			return out, fmt.Errorf("stream %s: %w", name, err)
		}
		out[i] = stream.CachedInfo().State.LastSeq
	}
	return out, nil
}

// options are a replay's, as `fleetflow replay` reading NATS sets them: up to the placer's acknowledgement
// floor, so events it has not answered yet are not taken for decisions it failed to make.
func (n *NATSStreams) options(ctx context.Context) (replay.Options, error) {
	through, err := replay.PlacerFloor(ctx, n.JS)
	return replay.Options{Through: through}, err
}

func (n *NATSStreams) open(ctx context.Context) func() (replay.History, error) {
	return func() (replay.History, error) { return replay.ReadStreams(ctx, n.JS, replay.ReadOptions{}) }
}

// Explain implements Streams. The fleet view a replay leaves is kept until the streams grow, so opening
// several workloads of a quiet fleet replays the history once.
func (n *NATSStreams) Explain(ctx context.Context, workload string) (*explain.Explanation, error) {
	n.replays.Lock()
	defer n.replays.Unlock()
	ends, err := n.ends(ctx)
	if err != nil {
		return nil, err
	}
	if n.view == nil || ends != n.viewEnds {
		opts, err := n.options(ctx)
		if err != nil {
			return nil, err
		}
		h, err := n.open(ctx)()
		if err != nil {
			return nil, err
		}
		s := replay.NewSession(opts)
		_, err = s.Run(ctx, h)
		_ = h.Close()
		if err != nil {
			return nil, err
		}
		n.view, n.viewEnds = s.Snapshot(), ends
	}
	id, err := explain.ResolveID(n.view, workload)
	if err != nil {
		return nil, err
	}
	return explain.Explain(n.view, id)
}

// Trail implements Streams.
func (n *NATSStreams) Trail(ctx context.Context, workload *audit.WorkloadSelector, limit int) ([]audit.AuditRecord, error) {
	var out []audit.AuditRecord
	err := audit.AuditTail(ctx, n.JS, audit.AuditQuery{Workload: workload}, func(r audit.AuditRecord) error {
		out = append(out, r)
		if len(out) > 2*limit {
			out = append(out[:0], out[len(out)-limit:]...)
		}
		return nil
	})
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, err
}

// WhatIf implements Streams.
func (n *NATSStreams) WhatIf(ctx context.Context, w replay.WhatIf) (*replay.WhatIfReport, error) {
	n.replays.Lock()
	defer n.replays.Unlock()
	opts, err := n.options(ctx)
	if err != nil {
		return nil, err
	}
	return replay.RunWhatIf(ctx, n.open(ctx), w, opts)
}
