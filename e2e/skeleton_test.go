package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/consumers/applier"
	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestWorkloadLifecycle: a CR created on the control plane lands in the first Ready workload cluster,
// follows updates, survives a redelivered decision unchanged, and is deleted with its source.
func TestWorkloadLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	source := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-a", job.GetName())
	target := e.Clusters["cluster-a"] // first Ready cluster by name

	var placed *unstructured.Unstructured
	e2eenv.Eventually(t, e2eenv.Settle, "the job in cluster-a", func() bool {
		placed = e2eenv.Get(t, target, pytorchJobKind, "team-a", job.GetName())
		return placed != nil
	})
	if got := placed.GetLabels()[applier.LabelWorkloadUID]; got != string(source.GetUID()) {
		t.Errorf("placed copy has workload uid label %q, want %q", got, source.GetUID())
	}
	if placed.GetLabels()["team"] != "a" {
		t.Errorf("user labels were not copied: %v", placed.GetLabels())
	}
	if e2eenv.Get(t, e.Clusters["cluster-b"], pytorchJobKind, "team-a", job.GetName()) != nil {
		t.Error("the job was also placed on cluster-b")
	}

	// Update: the new worker count reaches the workload cluster.
	gvr, _, _ := e.ControlPlane.ResourceFor(source)
	patch := []byte(`{"spec":{"pytorchReplicaSpecs":{"Worker":{"replicas":4}}}}`)
	if _, err := e.ControlPlane.Dynamic.Resource(gvr).Namespace("team-a").Patch(ctx, source.GetName(), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the update in cluster-a", func() bool {
		placed = e2eenv.Get(t, target, pytorchJobKind, "team-a", job.GetName())
		replicas, _, _ := unstructured.NestedInt64(placed.Object, "spec", "pytorchReplicaSpecs", "Worker", "replicas")
		return replicas == 4
	})

	// Redeliver the latest decision: the applier carries it out again and nothing changes.
	redeliverLatestDecision(t, e, "cluster-a")
	again := e2eenv.Get(t, target, pytorchJobKind, "team-a", job.GetName())
	if again.GetResourceVersion() != placed.GetResourceVersion() {
		t.Errorf("redelivered decision changed the object: resourceVersion %s -> %s",
			placed.GetResourceVersion(), again.GetResourceVersion())
	}

	// Delete on the control plane removes the copy.
	if err := e.ControlPlane.Dynamic.Resource(gvr).Namespace("team-a").Delete(ctx, job.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the job gone from cluster-a", func() bool {
		return e2eenv.Get(t, target, pytorchJobKind, "team-a", job.GetName()) == nil
	})

	// An auditor with nothing but a NATS client sees the whole story of the workload, in order.
	sel, err := audit.ParseWorkloadSelector("PyTorchJob/team-a/" + job.GetName())
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{schemas.TypeWorkloadChanged, schemas.TypePlacementVerdict,
		schemas.TypePlacementDecided, schemas.TypePlacementApplied,
		schemas.TypeWorkloadChanged, schemas.TypePlacementDecided, schemas.TypePlacementApplied,
		schemas.TypeWorkloadDeleted, schemas.TypePlacementDecided, schemas.TypePlacementApplied}
	var types []string
	e2eenv.Eventually(t, e2eenv.Settle, "the whole story in the audit trail", func() bool {
		types = nil
		err := audit.AuditTail(ctx, e.Bus.JetStream, audit.AuditQuery{Workload: sel}, func(r audit.AuditRecord) error {
			if r.Err != nil {
				t.Errorf("unreadable audit record %s/%d: %v", r.Stream, r.Sequence, r.Err)
			}
			if _, carried := r.Payload.(*schemas.PlacementDecided); carried && r.Verdict() != nil {
				// The Placed verdict rides with its Apply: it is said first, then carried out.
				types = append(types, schemas.TypePlacementVerdict)
			}
			types = append(types, r.Event.Type())
			return nil
		})
		return err == nil && isSubsequence(wantOrder, types)
	})
	if !isSubsequence(wantOrder, types) {
		t.Errorf("audit trail %v does not contain %v in order", types, wantOrder)
	}
}

func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// redeliverLatestDecision republishes the newest decision for cluster under a fresh message id (so
// dedupe does not drop it, as a redelivery would not be dropped) and waits until the applier acked it.
func redeliverLatestDecision(t *testing.T, e *e2eenv.Env, cluster string) {
	t.Helper()
	ctx := t.Context()
	stream, err := e.Bus.JetStream.Stream(ctx, schemas.StreamDecisions)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := stream.GetLastMsgForSubject(ctx, schemas.ClusterDecisionsFilter(cluster))
	if err != nil {
		t.Fatalf("latest decision for %s: %v", cluster, err)
	}
	msg := nats.NewMsg(latest.Subject)
	for k, v := range latest.Header {
		if k != nats.MsgIdHdr {
			msg.Header[k] = v
		}
	}
	msg.Data = latest.Data
	ack, err := e.Bus.JetStream.PublishMsg(ctx, msg)
	if err != nil {
		t.Fatal(err)
	}
	waitConsumed(t, e, schemas.StreamDecisions, schemas.ApplierConsumerName(cluster), ack.Sequence)
	if !strings.Contains(e.Logs.String(), "decision carried out") {
		t.Error("the applier did not report carrying out the redelivered decision")
	}
}

// waitConsumed waits until a durable consumer has delivered and acked every message up to seq.
func waitConsumed(t *testing.T, e *e2eenv.Env, stream, durable string, seq uint64) {
	t.Helper()
	consumer, err := e.Bus.JetStream.Consumer(t.Context(), stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "consumer "+durable+" to ack stream sequence "+strconvU(seq), func() bool {
		info, err := consumer.Info(context.Background())
		return err == nil && info.AckFloor.Stream >= seq
	})
}

// TestBadMessagesDoNotStopConsumers publishes garbage, a non-CloudEvent and an event with an invalid
// payload to the placer's and an applier's subjects; both stay up, terminate the bad messages with a
// logged reason, and still place a good workload submitted behind them.
func TestBadMessagesDoNotStopConsumers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team-b", Name: "junk", UID: "u"}
	badPayload := nats.Header{}
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": "bad-payload", "ce-source": "/e2e", "Content-Type": "application/json",
	} {
		badPayload.Set(k, v)
	}
	for _, subject := range []string{schemas.WorkloadSubject(ref), schemas.DecisionSubject("cluster-a", ref)} {
		for i, m := range []struct {
			header    nats.Header
			data      string
			eventType string
		}{
			{nil, "\x00\x01 garbage", ""},
			{nats.Header{"Foo": []string{"bar"}}, `{"hello":"world"}`, ""},
			{badPayload, `{"object":{"metadata":{}}}`, schemas.TypeWorkloadChanged},
			{badPayload, `{"decisionID":"","action":"Explode"}`, schemas.TypePlacementDecided},
		} {
			msg := nats.NewMsg(subject)
			if m.header != nil {
				for k, v := range m.header {
					msg.Header[k] = v
				}
				msg.Header.Set("ce-id", "bad-"+strconvU(uint64(i))+"-"+subject)
				msg.Header.Set("ce-type", m.eventType)
			}
			msg.Data = []byte(m.data)
			if _, err := e.Bus.JetStream.PublishMsg(ctx, msg); err != nil {
				t.Fatal(err)
			}
		}
	}

	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace("team-b")
	job.SetName("after-junk")
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the good job placed behind the junk", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-b", "after-junk") != nil
	})
	logs := e.Logs.String()
	for _, reason := range []string{"no ce-specversion header", "invalid payload", "Explode"} {
		if !strings.Contains(logs, reason) {
			t.Errorf("no logged termination reason %q", reason)
		}
	}
	for _, durable := range []string{schemas.ConsumerPlacer, schemas.ApplierConsumerName("cluster-a")} {
		stream := schemas.StreamEvents
		if durable != schemas.ConsumerPlacer {
			stream = schemas.StreamDecisions
		}
		consumer, err := e.Bus.JetStream.Consumer(ctx, stream, durable)
		if err != nil {
			t.Fatal(err)
		}
		e2eenv.Eventually(t, e2eenv.Settle, durable+" with nothing pending", func() bool {
			info, err := consumer.Info(context.Background())
			return err == nil && info.NumPending == 0 && info.NumAckPending == 0
		})
	}
}
