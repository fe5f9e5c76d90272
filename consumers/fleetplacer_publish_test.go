package consumers

import (
	"context"
	"errors"
	"io"
	"log/slog"
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

type sent struct{ eventType, subject, id string }

// asyncRecorder is an AsyncEventPublisher that records what it is given and refuses events of the types in
// refuse, the way a stream answers an async publish with an error.
type asyncRecorder struct {
	sent   []sent
	refuse map[string]bool
}

func (r *asyncRecorder) Publish(context.Context, string, cloudevents.Event) (*jetstream.PubAck, error) {
	return nil, errors.New("the placer must publish asynchronously when it can")
}

func (r *asyncRecorder) PublishAsync(subject string, e cloudevents.Event) (jetstream.PubAckFuture, error) {
	f := &fakeFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: nats.NewMsg(subject)}
	if r.refuse[e.Type()] {
		f.err <- errors.New("stream refused the message")
		return f, nil
	}
	r.sent = append(r.sent, sent{e.Type(), subject, e.ID()})
	f.ok <- &jetstream.PubAck{Stream: "test", Sequence: uint64(len(r.sent))}
	return f, nil
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
	e, err := schemas.NewEvent(eventType, "/test", subject, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq, Attempt: 1}
}

// TestRefusedPublishIsRepublishedOnRetry: when the decision of a workload is refused by the stream, the
// event fails, and its retry publishes the decision again with the same id, instead of believing it
// published already.
func TestRefusedPublishIsRepublishedOnRetry(t *testing.T) {
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	pub := &asyncRecorder{refuse: map[string]bool{}}
	p, err := NewPlacer(pub, karta.NewRegistry(builtins...), PlacerConfig{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	now := time.Now()
	object := func(apiVersion, kind, name string, extra map[string]any) *schemas.ObjectChanged {
		obj := map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "1"}}
		for k, v := range extra {
			obj[k] = v
		}
		return &schemas.ObjectChanged{Object: obj}
	}
	cluster := object("fleetflow.io/v1alpha1", "Cluster", "east", map[string]any{
		"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"}}})
	policy := object("fleetflow.io/v1alpha1", "SchedulePolicy", "all", map[string]any{"spec": map[string]any{}})
	deployment := object("apps/v1", "Deployment", "web", map[string]any{"spec": map[string]any{"replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web",
			"resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}}})
	deployment.Object["metadata"].(map[string]any)["namespace"] = "team"
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
		if err := p.Handle(ctx, d); err != nil {
			t.Fatalf("%s: %v", d.Subject, err)
		}
	}
	workload := delivery(t, 6, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(deployment.Ref()), deployment)

	pub.refuse[schemas.TypePlacementDecided] = true
	if err := p.Handle(ctx, workload); err == nil {
		t.Fatal("Handle succeeded although the stream refused the decision")
	}
	verdictsBefore := len(pub.ofType(schemas.TypePlacementVerdict))

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
	verdicts := pub.ofType(schemas.TypePlacementVerdict)
	if len(verdicts) != verdictsBefore+1 || verdicts[len(verdicts)-1].id != verdicts[0].id {
		t.Errorf("verdicts = %+v, want the first one published again under the same id", verdicts)
	}
}
