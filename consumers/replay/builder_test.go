package replay_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// recording is a history made the way the live pipeline makes one: inputs stored in the events stream, each
// handed to a placer whose verdicts are stored there too, after the input, and its decisions in the
// decisions stream.
type recording struct {
	t       *testing.T
	placer  *placer.Placer
	pub     *streamPublisher
	records []replay.Record
	now     time.Time
}

// streamPublisher stores what the live placer publishes as records of the recording.
type streamPublisher struct{ r *recording }

func (p *streamPublisher) Publish(_ context.Context, subject string, e cloudevents.Event) (*jetstream.PubAck, error) {
	stream := schemas.StreamEvents
	if bytes.HasPrefix([]byte(subject), []byte(schemas.SubjectDecisionsRoot)) {
		stream = schemas.StreamDecisions
	}
	seq := p.r.store(stream, subject, e)
	return &jetstream.PubAck{Stream: stream, Sequence: seq}, nil
}

const epoch = "testepoch"

func newRecording(t *testing.T, cfg placer.PlacerConfig) *recording {
	t.Helper()
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	r := &recording{t: t, now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	r.pub = &streamPublisher{r: r}
	r.placer, err = placer.NewPlacer(r.pub, karta.NewRegistry(builtins...), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r.placer.SetEpoch(epoch)
	return r
}

func (r *recording) last(stream string) uint64 {
	var n uint64
	for _, rec := range r.records {
		if rec.Stream == stream {
			n = rec.Sequence
		}
	}
	return n
}

func (r *recording) store(stream, subject string, e cloudevents.Event) uint64 {
	seq := r.last(stream) + 1
	r.records = append(r.records, replay.Record{Stream: stream, Subject: subject, Sequence: seq, Stored: r.now, Event: e})
	return seq
}

// input stores an input event and has the live placer handle it.
func (r *recording) input(eventType, subject string, payload schemas.Payload) {
	r.t.Helper()
	r.now = r.now.Add(100 * time.Millisecond)
	e, err := codec.NewEvent(eventType, "/test", subject, subject+"/"+r.now.String(), payload)
	if err != nil {
		r.t.Fatal(err)
	}
	e.SetTime(r.now)
	seq := r.store(schemas.StreamEvents, subject, e)
	if err := r.placer.Handle(r.t.Context(), bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq,
		Attempt: 1, Stored: r.now}); err != nil {
		r.t.Fatalf("live placer, %s: %v", subject, err)
	}
}

// tick stores a tick carrying cfg's settings.
func (r *recording) tick(cfg placer.PlacerConfig) {
	r.input(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: r.now, Settings: cfg.Settings()})
}

// cluster registers a Ready cluster with one node of cpus CPUs that serves Deployments.
func (r *recording) cluster(name string, cpus string) {
	r.t.Helper()
	r.input(schemas.TypeClusterChanged, schemas.ClusterSpecSubject(name), eventtest.Cluster(name, map[string]any{"name": name}))
	r.heartbeat(name)
	r.input(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(name), &schemas.ClusterAPIs{Cluster: name, APIs: []string{"apps/v1/Deployment"}})
	r.input(schemas.TypeNodeChanged, schemas.NodeSubject(name, "n1"), eventtest.Node(name, "n1", cpus))
}

func (r *recording) heartbeat(cluster string) {
	r.input(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(cluster), &schemas.ClusterHeartbeat{Cluster: cluster, Time: r.now})
}

// policyObject is a SchedulePolicy for Deployments that fills the clusters named, in order.
func policyObject(name string, clusters ...string) *schemas.ObjectChanged {
	return eventtest.Policy(name, eventtest.FillInOrder(clusters...))
}

func (r *recording) policy(name string, clusters ...string) {
	pol := policyObject(name, clusters...)
	r.input(schemas.TypePolicyChanged, schemas.PolicySubject(pol.Ref()), pol)
}

func (r *recording) workload(name, cpu string) {
	w := eventtest.Deployment(name, cpu)
	r.input(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(w.Ref()), w)
}

// exported is the recording written as `fleetflow audit export` writes it, and read back.
func (r *recording) exported() replay.History {
	r.t.Helper()
	var buf bytes.Buffer
	for _, rec := range r.records {
		line, err := replay.MarshalRecord(rec)
		if err != nil {
			r.t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return replay.ReadFile(io.NopCloser(&buf), "history.jsonl")
}

// dropFirst removes the first record of stream, numbering the stream's later records down so it has no gap.
func dropFirst(records []replay.Record, stream string) []replay.Record {
	var out []replay.Record
	dropped := false
	for _, rec := range records {
		if rec.Stream == stream {
			if !dropped {
				dropped = true
				continue
			}
			rec.Sequence--
		}
		out = append(out, rec)
	}
	return out
}

func firstOf(records []replay.Record, stream string) replay.Record {
	for _, rec := range records {
		if rec.Stream == stream {
			return rec
		}
	}
	panic("no record of " + stream)
}

// renamed is rec stored again at seq under another id.
func renamed(rec replay.Record, seq uint64) replay.Record {
	rec.Event = rec.Event.Clone()
	rec.Event.SetID(rec.Event.ID() + "-other")
	rec.Sequence = seq
	return rec
}

// tickOf stores a tick of the leadership term, carrying cfg's settings.
func (r *recording) tickOf(cfg placer.PlacerConfig, term string) {
	r.input(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: r.now, Settings: cfg.Settings(), Placer: term})
}
