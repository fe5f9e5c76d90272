package benchpipeline

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// The phases of a run with Config.FloodNodeEvents: the same workload mix three times, the flood during the
// second only, so the flood's effect shows against a phase on either side of it (the fleet fills up from one
// phase to the next, which makes each a little slower than the one before on its own).
const (
	PhaseBefore = "before"
	PhaseFlood  = "flood"
	PhaseAfter  = "after"
)

// FloodPhase is what one phase of a run with Config.FloodNodeEvents measured.
type FloodPhase struct {
	Name string `json:"name"`
	// NodeEvents is how many node reports the flooding cluster published in the phase, NodeEventsPerSecond
	// the rate it managed (while the workload events were being published).
	NodeEvents          int     `json:"nodeEvents"`
	NodeEventsPerSecond float64 `json:"nodeEventsPerSecond"`
	// DecisionsPerSecond, P50Ms, P99Ms and MaxMs are the phase's workloads', as Result's.
	DecisionsPerSecond float64 `json:"decisionsPerSecond"`
	P50Ms              float64 `json:"p50Ms"`
	P99Ms              float64 `json:"p99Ms"`
	MaxMs              float64 `json:"maxMs"`
	Placed             int     `json:"placed"`
	Unschedulable      int     `json:"unschedulable"`
	// Seconds runs from the phase's first workload publish until the placer has taken every event of it.
	// StoredBytesPerSecond is how fast FLEETFLOW_EVENTS grew while the phase published (workload events,
	// node reports, and what the placer stored for them in that time).
	Seconds              float64 `json:"seconds"`
	StoredBytesPerSecond float64 `json:"storedBytesPerSecond"`
	// DeadLetters counts the dead letters the phase added, and CPUSeconds is the process's CPU over it.
	DeadLetters int     `json:"deadLetters"`
	CPUSeconds  float64 `json:"cpuSeconds"`
}

// floodLabels keep the flooding cluster out of the run's one policy, whose tiers select provider onprem, then
// cloud: every workload is placed on the other clusters, so what the flood changes for them is its cost.
func floodLabels() map[string]string {
	return map[string]string{"provider": "flood", "topology.kubernetes.io/region": "region-flood"}
}

// floodMessages encodes n node reports of cluster c, round robin over its nodes, each taking a KiB more off
// the node's allocatable memory than its last, so no two are alike: JetStream's dedupe drops a repeated
// report, and a producer's reports of a changing node are not repeats.
func floodMessages(c, nodes, gpuNodes, n int) ([]*nats.Msg, error) {
	msgs := make([]*nats.Msg, n)
	states := make([]*schemas.NodeState, nodes)
	for i := range n {
		node := i % nodes
		if states[node] == nil {
			states[node] = nodeState(c, node, gpuNodes)
		}
		state := *states[node]
		state.Allocatable = maps.Clone(state.Allocatable)
		memory := state.Allocatable[corev1.ResourceMemory].DeepCopy()
		memory.Sub(*resource.NewQuantity(int64(1+i/nodes)*1024, resource.BinarySI))
		state.Allocatable[corev1.ResourceMemory] = memory
		o, err := stateEvent(schemas.TypeNodeChanged, schemas.NodeSubject(state.Cluster, state.Name), "node",
			state.Cluster+"/"+state.Name, schemas.SourceClusterProducer(state.Cluster), &state)
		if err != nil {
			return nil, err
		}
		if msgs[i], err = bus.EncodeWithID(o.subject, o.event); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// flood publishes msgs at rate per second, each stamped with the time it is sent, until stop is closed or
// msgs run out, then waits for their acknowledgements. It returns how many it sent and over how long.
func flood(ctx context.Context, p *asyncPublisher, msgs []*nats.Msg, rate int, stop <-chan struct{}) (int, float64, error) {
	ticker := time.NewTicker(time.Millisecond)
	defer ticker.Stop()
	start := time.Now()
	sent := 0
loop:
	for sent < len(msgs) {
		// Each tick sends what is due by now, so a late tick catches up instead of lowering the rate.
		due := min(len(msgs), int(time.Since(start).Seconds()*float64(rate))+1)
		for ; sent < due; sent++ {
			msg := msgs[sent]
			msgs[sent] = nil
			msg.Header.Set("ce-time", time.Now().UTC().Format(time.RFC3339Nano))
			if err := p.publish(ctx, msg); err != nil {
				return sent, 0, fmt.Errorf("flood: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return sent, 0, ctx.Err()
		case <-stop:
			break loop
		case <-ticker.C:
		}
	}
	seconds := time.Since(start).Seconds()
	if err := p.wait(ctx); err != nil {
		return sent, 0, fmt.Errorf("flood: %w", err)
	}
	return sent, seconds, nil
}
