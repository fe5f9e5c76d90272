package replaybench

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/benchpipeline"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// Epoch is the streams' epoch the synthetic history's outputs carry.
const Epoch = "replaybench"

// Mix counts what a synthesized history holds.
type Mix struct {
	// Inputs counts the events a placer consumes, by event type without its prefix and version
	// ("workload.changed"); InputTotal sums them.
	Inputs     map[string]int `json:"inputs"`
	InputTotal int            `json:"inputTotal"`
	// Decisions counts the recorded decisions by action; Verdicts the verdicts recorded on their own
	// (a Placed one rides with its Apply).
	Decisions map[string]int `json:"decisions"`
	Verdicts  int            `json:"verdicts"`
	// Other counts what the placer published that is neither input nor compared output (analyses).
	Other int `json:"other"`
}

// synth records a history the way the live pipeline does: each input stored in the events stream and
// handed to a live placer, whose verdicts are stored after it in the events stream and its decisions in
// the decisions stream. Appliers confirm every decision at once and cluster producers report the copy's
// pods running, as on a healthy fleet.
type synth struct {
	ctx     context.Context
	cfg     Config
	placer  *placer.Placer
	records []replay.Record
	seq     map[string]uint64
	now     time.Time
	// nextTick and nextBeat are when the placer's next tick and the clusters' next heartbeats are due.
	nextTick, nextBeat time.Time
	// decided are the decisions the placer published for the input being handled.
	decided []*schemas.PlacementDecided
	mix     Mix
	fed     int
}

// Synthesize records a history of cfg's fleet and workloads.
func Synthesize(ctx context.Context, cfg Config) (*History, *Mix, error) {
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, nil, fmt.Errorf("built-in resource interfaces: %w", err)
	}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	s := &synth{ctx: ctx, cfg: cfg, seq: map[string]uint64{}, now: start, nextTick: start, nextBeat: start.Add(benchpipeline.HeartbeatInterval),
		mix: Mix{Inputs: map[string]int{}, Decisions: map[string]int{}}}
	s.placer, err = placer.NewPlacer(s, karta.NewRegistry(builtins...), placer.PlacerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	s.placer.SetEpoch(Epoch)
	// The first tick comes before anything else, as a placer ticks from its start.
	if err := s.due(); err != nil {
		return nil, nil, err
	}
	err = benchpipeline.FleetEvents(cfg.Clusters, cfg.NodesPerCluster, cfg.GPUNodePercent, start,
		func(e benchpipeline.Event) error { return s.send(e.Subject, e.Event) })
	if err != nil {
		return nil, nil, fmt.Errorf("fleet: %w", err)
	}
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0))
	for i := range cfg.Workloads {
		if cfg.Lifetime > 0 && i >= cfg.Lifetime {
			if err := s.deleteWorkload(i - cfg.Lifetime); err != nil {
				return nil, nil, err
			}
		}
		if err := s.submit(i, r); err != nil {
			return nil, nil, err
		}
	}
	return &History{Records: s.records}, &s.mix, nil
}

// Publish stores what the live placer publishes, as the streams would.
func (s *synth) Publish(_ context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error) {
	stream := schemas.StreamEvents
	switch {
	case schemas.IsDecision(subject):
		stream = schemas.StreamDecisions
		p, err := codec.DecodePayload(e)
		if err != nil {
			return nil, fmt.Errorf("decision on %s: %w", subject, err)
		}
		d := p.(*schemas.PlacementDecided)
		s.decided = append(s.decided, d)
		s.mix.Decisions[string(d.Action)]++
	case e.Type() == schemas.TypePlacementVerdict:
		s.mix.Verdicts++
	default:
		s.mix.Other++
	}
	return &jetstream.PubAck{Stream: stream, Sequence: s.store(stream, subject, e)}, nil
}

func (s *synth) store(stream, subject string, e cloudevents.Event) uint64 {
	s.seq[stream]++
	s.records = append(s.records, replay.Record{Stream: stream, Subject: subject, Sequence: s.seq[stream], Stored: s.now, Event: e})
	return s.seq[stream]
}

// send advances the clock by a step, sends the heartbeats and tick then due, and then e.
func (s *synth) send(subject string, e cloudevents.Event) error {
	s.now = s.now.Add(s.cfg.Step)
	if err := s.due(); err != nil {
		return err
	}
	return s.input(subject, e)
}

// due sends the clusters' heartbeats and the placer's tick that are due by now.
func (s *synth) due() error {
	for !s.nextBeat.After(s.now) {
		for c := range s.cfg.Clusters {
			hb, err := benchpipeline.HeartbeatEvent(c, s.now)
			if err != nil {
				return err
			}
			if err := s.input(hb.Subject, hb.Event); err != nil {
				return err
			}
		}
		s.nextBeat = s.nextBeat.Add(benchpipeline.HeartbeatInterval)
	}
	for !s.nextTick.After(s.now) {
		id := fmt.Sprintf("tick/%d", s.now.UnixNano()/int64(app.PlacerTickInterval))
		e, err := codec.NewEvent(schemas.TypePlacerTick, schemas.SourcePlacer, schemas.SubjectPlacerTick, id,
			&schemas.PlacerTick{Time: s.now, Settings: placer.PlacerConfig{}.Settings()})
		if err != nil {
			return err
		}
		if err := s.input(schemas.SubjectPlacerTick, e); err != nil {
			return err
		}
		s.nextTick = s.nextTick.Add(app.PlacerTickInterval)
	}
	return nil
}

// input stores e, stamped with the clock, and has the live placer handle it as its consumer would.
func (s *synth) input(subject string, e cloudevents.Event) error {
	e.SetTime(s.now)
	payload, err := codec.DecodePayload(e)
	if err != nil {
		return fmt.Errorf("synthetic %s on %s: %w", e.Type(), subject, err)
	}
	s.mix.Inputs[shortType(e.Type())]++
	s.mix.InputTotal++
	seq := s.store(schemas.StreamEvents, subject, e)
	if err := s.placer.Handle(s.ctx, bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq,
		Attempt: 1, Stored: s.now}); err != nil {
		return fmt.Errorf("live placer, %s sequence %d: %w", subject, seq, err)
	}
	// What the placer's consumer loop does between batches.
	s.placer.TakeGone()
	s.placer.TakeGoneFleet()
	if s.fed++; s.fed%1024 == 0 {
		s.placer.ForgetAppliedThrough(seq)
	}
	return nil
}

func shortType(t string) string {
	t = strings.TrimPrefix(t, schemas.TypePrefix)
	if i := strings.LastIndex(t, "."); i > 0 {
		t = t[:i]
	}
	return t
}

// answer sends what the appliers and cluster producers report about the decisions of the last input: each
// decision carried out, and for an Apply the copy's pods running.
func (s *synth) answer() error {
	decided := s.decided
	s.decided = nil
	for _, d := range decided {
		applied := &schemas.PlacementApplied{DecisionID: d.DecisionID, Workload: d.Workload, Cluster: d.Cluster,
			Action: d.Action, Sequence: d.Sequence}
		if d.Action == schemas.ActionApply {
			applied.ResourceVersion = strconv.FormatUint(d.Sequence, 10)
		}
		subject := schemas.PlacementSubject(d.Cluster, d.Workload)
		e, err := codec.NewEvent(schemas.TypePlacementApplied, schemas.SourceApplier(d.Cluster), subject,
			schemas.PlacementOutcomeID("applied", d.DecisionID), applied)
		if err != nil {
			return err
		}
		if err := s.send(subject, e); err != nil {
			return err
		}
		if d.Action != schemas.ActionApply {
			continue
		}
		status := &schemas.WorkloadStatus{Cluster: d.Cluster, Workload: d.Workload, Generation: 1, SourceGeneration: 1,
			Status: map[string]any{"conditions": []any{map[string]any{"type": "Running", "status": "True"}}}}
		subject = schemas.WorkloadStatusSubject(d.Cluster, d.Workload)
		id := schemas.ContentID("status", d.Cluster+"/"+d.Workload.Key(), []byte(d.DecisionID))
		if e, err = codec.NewEvent(schemas.TypeWorkloadStatus, schemas.SourceClusterProducer(d.Cluster), subject, id, status); err != nil {
			return err
		}
		if err := s.send(subject, e); err != nil {
			return err
		}
	}
	return nil
}

// teams are the namespaces the pipeline benchmark's fleet registers.
var teams = []string{"team-vision", "team-llm", "team-speech", "team-recsys"}

func workloadRef(i int) schemas.ObjectRef {
	return schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: teams[i%len(teams)],
		Name: fmt.Sprintf("train-%06d", i), UID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}
}

// submit sends workload i, a PyTorchJob gang of the shapes bench placement uses, and what follows its decisions.
func (s *synth) submit(i int, r *rand.Rand) error {
	ref := workloadRef(i)
	workers := 1 + r.IntN(4)
	gpus := strconv.Itoa([]int{1, 2, 4, 8}[r.IntN(4)])
	gpuPod := map[string]any{"spec": map[string]any{
		"nodeSelector": map[string]any{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
		"tolerations":  []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
		"containers": []any{map[string]any{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:25.01-py3", "resources": map[string]any{
			"requests": map[string]any{"cpu": "16", "memory": "128Gi", "nvidia.com/gpu": gpus},
			"limits":   map[string]any{"nvidia.com/gpu": gpus}}}}}}
	masterPod := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "master",
		"image": "nvcr.io/nvidia/pytorch:25.01-py3", "resources": map[string]any{
			"requests": map[string]any{"cpu": "4", "memory": "16Gi"}}}}}}
	rv := strconv.Itoa(100_000 + i)
	obj := map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind,
		"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace, "uid": ref.UID, "resourceVersion": rv,
			"generation": int64(1), "creationTimestamp": s.now.Format(time.RFC3339),
			"labels": map[string]any{"team": ref.Namespace, "app.kubernetes.io/part-of": "bench"}},
		"spec": map[string]any{"runPolicy": map[string]any{"cleanPodPolicy": "None"}, "pytorchReplicaSpecs": map[string]any{
			"Master": map[string]any{"replicas": int64(1), "restartPolicy": "OnFailure", "template": masterPod},
			"Worker": map[string]any{"replicas": int64(workers), "restartPolicy": "OnFailure", "template": gpuPod}}}}
	subject := schemas.WorkloadSubject(ref)
	e, err := codec.NewEvent(schemas.TypeWorkloadChanged, schemas.SourceControlPlaneProducer, subject,
		schemas.WorkloadChangedID(ref, rv), &schemas.ObjectChanged{Object: obj})
	if err != nil {
		return fmt.Errorf("workload %d: %w", i, err)
	}
	if err := s.send(subject, e); err != nil {
		return err
	}
	return s.answer()
}

// deleteWorkload sends workload i's deletion, as when its job finished, and the appliers' reports of its copies
// deleted.
func (s *synth) deleteWorkload(i int) error {
	ref := workloadRef(i)
	subject := schemas.WorkloadSubject(ref)
	e, err := codec.NewEvent(schemas.TypeWorkloadDeleted, schemas.SourceControlPlaneProducer, subject,
		schemas.WorkloadDeletedID(ref), &schemas.ObjectDeleted{Workload: ref})
	if err != nil {
		return fmt.Errorf("delete workload %d: %w", i, err)
	}
	if err := s.send(subject, e); err != nil {
		return err
	}
	return s.answer()
}
