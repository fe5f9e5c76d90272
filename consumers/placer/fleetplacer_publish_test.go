package placer

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// fakeFuture is what JetStream hands back for an async publish: an acknowledgement or an error.
type fakeFuture struct {
	ok  chan *jetstream.PubAck
	err chan error
	msg *nats.Msg
}

func (f *fakeFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *fakeFuture) Err() <-chan error            { return f.err }
func (f *fakeFuture) Msg() *nats.Msg               { return f.msg }

type sent struct {
	eventType, subject, id string
	event                  cloudevents.Event
}

// payload decodes what was sent.
func (s sent) payload(t *testing.T) schemas.Payload {
	t.Helper()
	p, err := codec.DecodePayload(s.event)
	if err != nil {
		t.Fatalf("%s on %s: %v", s.eventType, s.subject, err)
	}
	return p
}

// asyncRecorder is an AsyncEventPublisher that records what it is given and refuses events of the types in
// refuse, the way a stream answers an async publish with an error.
type asyncRecorder struct {
	sent   []sent
	refuse map[string]bool
	// refuseSubject, when set, is a subject whose publishes are refused.
	refuseSubject string
}

func (r *asyncRecorder) Publish(context.Context, string, cloudevents.Event) (*jetstream.PubAck, error) {
	return nil, errors.New("the placer must publish asynchronously when it can")
}

func (r *asyncRecorder) PublishAsync(subject string, e cloudevents.Event) (jetstream.PubAckFuture, error) {
	f := &fakeFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: nats.NewMsg(subject)}
	if r.refuse[e.Type()] || (r.refuseSubject != "" && subject == r.refuseSubject) {
		f.err <- errors.New("stream refused the message")
		return f, nil
	}
	r.sent = append(r.sent, sent{eventType: e.Type(), subject: subject, id: e.ID(), event: e})
	f.ok <- &jetstream.PubAck{Stream: "test", Sequence: uint64(len(r.sent))}
	return f, nil
}

// verdicts are the verdicts sent, in order: events of their own and those carried by Apply decisions.
func (r *asyncRecorder) verdicts(t *testing.T) []*schemas.PlacementVerdict {
	t.Helper()
	var out []*schemas.PlacementVerdict
	for _, s := range r.sent {
		switch p := s.payload(t).(type) {
		case *schemas.PlacementVerdict:
			out = append(out, p)
		case *schemas.PlacementDecided:
			if p.Verdict != nil {
				out = append(out, p.Verdict)
			}
		}
	}
	return out
}

func (r *asyncRecorder) ofType(eventType string) []sent {
	var out []sent
	for _, s := range r.sent {
		if s.eventType == eventType {
			out = append(out, s)
		}
	}
	return out
}

func delivery(t *testing.T, seq uint64, eventType, subject string, payload schemas.Payload) bus.Delivery {
	t.Helper()
	e, err := codec.NewEvent(eventType, "/test", subject, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq, Attempt: 1}
}

// placerOnOneCluster is a placer whose view holds one Ready cluster "east" of 8 CPUs serving Deployments and
// a policy taking every workload, fed through Handle, publishing to the returned recorder.
func placerOnOneCluster(t *testing.T) (*Placer, *asyncRecorder) {
	t.Helper()
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	pub := &asyncRecorder{refuse: map[string]bool{}}
	p, err := NewPlacer(pub, karta.NewRegistry(builtins...), PlacerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	cluster := eventtest.Cluster("east", nil)
	policy := eventtest.Policy("all", map[string]any{})
	fleet := []bus.Delivery{
		delivery(t, 1, schemas.TypePolicyChanged, schemas.PolicySubject(policy.Ref()), policy),
		delivery(t, 2, schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), cluster),
		delivery(t, 3, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
			&schemas.ClusterHeartbeat{Cluster: "east", Time: now}),
		delivery(t, 4, schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"),
			&schemas.ClusterAPIs{Cluster: "east", APIs: []string{"apps/v1/Deployment"}}),
		delivery(t, 5, schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), &schemas.NodeState{Cluster: "east", Name: "n1",
			Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"),
				corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")}}),
	}
	for _, d := range fleet {
		if err := p.Handle(t.Context(), d); err != nil {
			t.Fatalf("%s: %v", d.Subject, err)
		}
	}
	return p, pub
}

// TestRefusedPublishIsRepublishedOnRetry: when the decision of a workload is refused by the stream, the
// event fails, and its retry publishes the decision again with the same id, instead of believing it
// published already.
func TestRefusedPublishIsRepublishedOnRetry(t *testing.T) {
	p, pub := placerOnOneCluster(t)
	ctx := t.Context()
	deployment := eventtest.Deployment("web", "1")
	workload := delivery(t, 6, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(deployment.Ref()), deployment)

	pub.refuse[schemas.TypePlacementDecided] = true
	if err := p.Handle(ctx, workload); err == nil {
		t.Fatal("Handle succeeded although the stream refused the decision")
	}

	pub.refuse = map[string]bool{}
	workload.Attempt = 2
	if err := p.Handle(ctx, workload); err != nil {
		t.Fatal(err)
	}
	decisions := pub.ofType(schemas.TypePlacementDecided)
	// The one cluster fits a 1-CPU Deployment, so the retry must publish exactly one Apply to it.
	if len(decisions) != 1 || decisions[0].subject != schemas.DecisionSubject("east", deployment.Ref()) {
		t.Fatalf("decisions after the retry = %+v, want one to east", decisions)
	}
	// The Placed verdict rode with the refused Apply, so the retried Apply carries it again.
	if v := decisions[0].payload(t).(*schemas.PlacementDecided).Verdict; v == nil || v.Status != schemas.VerdictPlaced {
		t.Errorf("the retried Apply carries verdict %+v, want the Placed verdict again", v)
	}
	if standalone := pub.ofType(schemas.TypePlacementVerdict); len(standalone) != 0 {
		t.Errorf("verdicts sent on their own = %+v, want none: the Placed verdict rides with its Apply", standalone)
	}
}

// TestFailedFlushRepublishesTheWholeBatch: events staged together are marked applied only by a Flush that
// saw every publish stored. When one publish of the batch was refused, every staged event's bookkeeping is
// put back, so the redelivered events publish all their decisions again, under the same ids.
func TestFailedFlushRepublishesTheWholeBatch(t *testing.T) {
	p, pub := placerOnOneCluster(t)
	ctx := t.Context()
	var batch []bus.Delivery
	for i, name := range []string{"web-a", "web-b", "web-c"} {
		obj := deployment(name)
		batch = append(batch, delivery(t, uint64(6+i), schemas.TypeWorkloadChanged, schemas.WorkloadSubject(obj.Ref()), obj))
	}
	// Only the last workload's decision is refused, so the failure shows in the acknowledgements only.
	pub.refuseSubject = schemas.DecisionSubject("east", batch[2].Payload.(*schemas.ObjectChanged).Ref())
	for _, d := range batch {
		if err := p.Stage(ctx, d); err != nil {
			t.Fatalf("stage %s: %v", d.Subject, err)
		}
	}
	if err := p.Flush(ctx); err == nil {
		t.Fatal("Flush succeeded although the stream refused a decision of the batch")
	}
	firstIDs := pub.ofType(schemas.TypePlacementDecided)

	pub.refuseSubject = ""
	for _, d := range batch {
		d.Attempt = 2
		if err := p.Stage(ctx, d); err != nil {
			t.Fatalf("stage %s again: %v", d.Subject, err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	decisions := pub.ofType(schemas.TypePlacementDecided)
	// Two decisions were stored by the first try and all three must be sent by the retry: 2 + 3.
	if len(firstIDs) != 2 || len(decisions) != 5 {
		t.Fatalf("decisions = %+v, want 2 from the failed batch then all 3 again", decisions)
	}
	for i, d := range decisions[:2] {
		if decisions[2+i].id != d.id {
			t.Errorf("retried decision %d has id %s, want %s as first sent", i, decisions[2+i].id, d.id)
		}
	}
	// Once flushed, the events count as applied: a third delivery changes nothing.
	for _, d := range batch {
		if err := p.Stage(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(pub.ofType(schemas.TypePlacementDecided)); n != 5 {
		t.Errorf("a redelivery after a successful flush published %d more decisions", n-5)
	}
}

// syncRecorder publishes synchronously, refusing the subjects in refuse.
type syncRecorder struct {
	sent   []string
	refuse map[string]bool
}

func (r *syncRecorder) Publish(_ context.Context, subject string, _ cloudevents.Event) (*jetstream.PubAck, error) {
	if r.refuse[subject] {
		return nil, errors.New("stream refused the message")
	}
	r.sent = append(r.sent, subject)
	return &jetstream.PubAck{Stream: "test", Sequence: uint64(len(r.sent))}, nil
}

// TestRefusedPublishWithNothingStagedFailsOnlyItsEvent: a publish refused at once, by a synchronous publisher,
// for the first event of a batch fails that event there (the consumer has no batch to flush); the next event
// is handled, and the refused one, redelivered, publishes what it failed to.
func TestRefusedPublishWithNothingStagedFailsOnlyItsEvent(t *testing.T) {
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	pub := &syncRecorder{refuse: map[string]bool{}}
	p, err := NewPlacer(pub, karta.NewRegistry(builtins...), PlacerConfig{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pol := eventtest.Policy("any", map[string]any{})
	setup := []bus.Delivery{
		delivery(t, 1, schemas.TypePolicyChanged, schemas.PolicySubject(pol.Ref()), pol),
		delivery(t, 2, schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), eventtest.Cluster("east", nil)),
		delivery(t, 3, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
			&schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()}),
		delivery(t, 4, schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"),
			&schemas.ClusterAPIs{Cluster: "east", APIs: []string{"apps/v1/Deployment"}}),
		delivery(t, 5, schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), eventtest.Node("east", "n1", "8")),
	}
	for _, d := range setup {
		if err := p.Handle(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	web, api := eventtest.Deployment("web", "1"), eventtest.Deployment("api", "1")
	webEvent := delivery(t, 6, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)
	apiEvent := delivery(t, 7, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(api.Ref()), api)
	pub.refuse[schemas.DecisionSubject("east", web.Ref())] = true
	if err := p.Stage(ctx, webEvent); err == nil {
		t.Fatal("web's event was staged although the stream refused its Apply")
	}
	if err := p.Stage(ctx, apiEvent); err != nil {
		t.Fatalf("api's event after web's failed alone: %v", err)
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatalf("flush of api's event: %v", err)
	}
	delete(pub.refuse, schemas.DecisionSubject("east", web.Ref()))
	webEvent.Attempt = 2
	if err := p.Handle(ctx, webEvent); err != nil {
		t.Fatalf("web's event redelivered: %v", err)
	}
	for _, ref := range []schemas.ObjectRef{web.Ref(), api.Ref()} {
		if !slices.Contains(pub.sent, schemas.DecisionSubject("east", ref)) {
			t.Errorf("no Apply of %s published; sent %v", ref.Name, pub.sent)
		}
	}
}

// fencedRecorder stores batches of messages, or refuses every batch with refuse.
type fencedRecorder struct {
	batches [][]*nats.Msg
	refuse  error
}

func (r *fencedRecorder) Publish(context.Context, string, cloudevents.Event) (*jetstream.PubAck, error) {
	return nil, errors.New("a fenced placer publishes batches only")
}

func (r *fencedRecorder) PublishMsgs(_ context.Context, msgs []*nats.Msg) error {
	if r.refuse != nil {
		return r.refuse
	}
	r.batches = append(r.batches, msgs)
	return nil
}

// TestFencedPlacerPublishesEachBatchWhole: with a FencedPublisher, what the staged events caused goes out in one
// call at Flush, each message with its id; a batch the fence refuses fails the Flush, and the redelivered
// events send the same messages again.
func TestFencedPlacerPublishesEachBatchWhole(t *testing.T) {
	p, _ := placerOnOneCluster(t)
	ctx := t.Context()
	fenced := &fencedRecorder{refuse: errors.New("fenced out")}
	p.publisher = fenced
	var batch []bus.Delivery
	for i, name := range []string{"web-a", "web-b"} {
		obj := deployment(name)
		batch = append(batch, delivery(t, uint64(6+i), schemas.TypeWorkloadChanged, schemas.WorkloadSubject(obj.Ref()), obj))
	}
	stage := func() error {
		for _, d := range batch {
			if err := p.Stage(ctx, d); err != nil {
				t.Fatalf("stage %s: %v", d.Subject, err)
			}
		}
		return p.Flush(ctx)
	}
	if err := stage(); err == nil || !strings.Contains(err.Error(), "fenced out") {
		t.Fatalf("Flush = %v, want the fence's refusal", err)
	}
	fenced.refuse = nil
	if err := stage(); err != nil {
		t.Fatal(err)
	}
	if len(fenced.batches) != 1 {
		t.Fatalf("%d batches published, want the two events' effects in one", len(fenced.batches))
	}
	var ids []string
	for _, m := range fenced.batches[0] {
		if m.Header.Get(jetstream.MsgIDHeader) == "" || m.Header.Get("ce-id") != m.Header.Get(jetstream.MsgIDHeader) {
			t.Errorf("message to %s: id %q, ce-id %q, want both the event's id", m.Subject, m.Header.Get(jetstream.MsgIDHeader), m.Header.Get("ce-id"))
		}
		ids = append(ids, m.Subject)
	}
	want := []string{schemas.DecisionSubject("east", batch[0].Payload.(*schemas.ObjectChanged).Ref()),
		schemas.DecisionSubject("east", batch[1].Payload.(*schemas.ObjectChanged).Ref())}
	if !slices.Equal(ids, want) {
		t.Errorf("batch = %v, want the two Applies %v", ids, want)
	}
}
