package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestAuditTailLeavesNoConsumers: every audit reads through ordered consumers; each must be gone from the
// server when the audit returns, or audits run in a loop would fill the streams' consumer limit.
func TestAuditTailLeavesNoConsumers(t *testing.T) {
	ctx := context.Background()
	js := bustest.JetStream(t)
	subject, event := placedVerdictOfJob(t)
	if _, err := bus.NewPublisher(js).Publish(ctx, subject, event); err != nil {
		t.Fatal(err)
	}
	sel := &WorkloadSelector{Group: "kubeflow.org", Kind: "PyTorchJob", Namespace: "ns", Name: "job"}

	for _, q := range []AuditQuery{{Workload: sel}, {}, {Workload: sel}} {
		records := 0
		if err := AuditTail(ctx, js, q, func(AuditRecord) error { records++; return nil }); err != nil {
			t.Fatal(err)
		}
		if records != 1 {
			t.Errorf("audit %+v read %d records, want the 1 verdict", q, records)
		}
	}
	for _, name := range []string{schemas.StreamEvents, schemas.StreamDecisions} {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers != 0 {
			t.Errorf("stream %s keeps %d consumers after the audits returned, want 0", name, info.State.Consumers)
		}
	}
}

// TestAuditSummaryOfAVerdictTellsTheAnalysis: a verdict carries the analysis it answers, so one line says
// what the workload asked for and where it went, and why other clusters were not chosen; an Apply that
// carries a Placed verdict says both.
func TestAuditSummaryOfAVerdictTellsTheAnalysis(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ml", Name: "train", UID: "u"}
	crdRef := schemas.ObjectRef{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "jobs.example.com"}
	placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 4, Status: schemas.VerdictPlaced, Clusters: []string{"east"},
		Policy: "gpu", Reasons: map[string]string{"west": "is not Ready"},
		Analysis: &schemas.Analysis{ResourceInterface: "pytorchjob", TotalPods: 3}}
	placedSummary := "PyTorchJob.kubeflow.org/ml/train analyzed by pytorchjob: 3 pods, requests none, Placed on east by policy gpu; west: is not Ready"
	cases := []struct {
		name    string
		verdict schemas.Payload
		want    string
	}{
		{"placed", placed, placedSummary},
		{"carried by its Apply", &schemas.PlacementDecided{DecisionID: "d", Workload: ref, Cluster: "east", Action: schemas.ActionApply,
			Sequence: 4, Reason: "placed by policy gpu", Verdict: placed},
			"PyTorchJob.kubeflow.org/ml/train decided Apply on east (sequence 4): placed by policy gpu; verdict: " + placedSummary},
		{"invalid", &schemas.PlacementVerdict{Workload: ref, Sequence: 5, Status: schemas.VerdictInvalid, Message: "no RI",
			Analysis: &schemas.Analysis{Error: "no RI"}},
			"PyTorchJob.kubeflow.org/ml/train analysis failed: no RI, Invalid: no RI"},
		// A kind no ResourceInterface describes (a CRD copied by a Duplicate policy) is copied as it is.
		{"kind without an RI", &schemas.PlacementVerdict{Workload: crdRef, Sequence: 7, Status: schemas.VerdictPlaced,
			Clusters: []string{"east", "west"}, Policy: "frameworks", Analysis: &schemas.Analysis{}},
			"CustomResourceDefinition.apiextensions.k8s.io/jobs.example.com described by no ResourceInterface: asks for nothing, " +
				"Placed on east,west by policy frameworks"},
		{"without analysis", &schemas.PlacementVerdict{Workload: ref, Sequence: 6, Status: schemas.VerdictUnschedulable},
			"PyTorchJob.kubeflow.org/ml/train Unschedulable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (AuditRecord{Payload: tc.verdict}).Summary(); got != tc.want {
				t.Errorf("Summary() = %q\nwant        %q", got, tc.want)
			}
		})
	}
}

// TestAuditTailShowsWhatIsNoEvent: a message in the streams that is no CloudEvent at all (a stray publish)
// is shown as unreadable, at the time the server stored it, instead of stopping the audit; and history is in
// the order the server stored it, whatever time an event claims.
func TestAuditTailShowsWhatIsNoEvent(t *testing.T) {
	ctx := t.Context()
	js := bustest.JetStream(t)
	subject, event := placedVerdictOfJob(t)
	event.SetTime(time.Now().Add(100 * 365 * 24 * time.Hour)) // a producer's clock far off
	if _, err := bus.NewPublisher(js).Publish(ctx, subject, event); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, subject, []byte("not a cloudevent")); err != nil {
		t.Fatal(err)
	}

	var records []AuditRecord
	if err := AuditTail(ctx, js, AuditQuery{}, func(r AuditRecord) error { records = append(records, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(records) != 2 {
		t.Fatalf("read %d records, want the verdict and the stray message", len(records))
	}
	if records[0].Err != nil || records[1].Err == nil {
		t.Fatalf("records in order %v, %v: want the verdict first, as stored, then the stray message", records[0].Err, records[1].Err)
	}
	stray := records[1]
	if !strings.HasPrefix(stray.Summary(), "unreadable message: ") || stray.Stored.IsZero() || !stray.Event.Time().Equal(stray.Stored) {
		t.Errorf("stray message summary %q stored %v event time %v, want unreadable at its stored time", stray.Summary(),
			stray.Stored, stray.Event.Time())
	}
}

// TestAuditSummaryOfFleetEvents: every kind of event has a line of its own, not its type said twice.
func TestAuditSummaryOfFleetEvents(t *testing.T) {
	jobRef := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ml", Name: "train"}
	tests := []struct {
		payload schemas.Payload
		want    string
	}{
		{&schemas.PlacerTick{Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, "placer tick at 2026-11-30T12:00:00Z"},
		{&schemas.NodeDeleted{Cluster: "east", Name: "gpu-3"}, "node east/gpu-3 deleted"},
		{&schemas.ClusterHeartbeat{Cluster: "east"}, "heartbeat from east"},
		{&schemas.PlacementApplied{Workload: jobRef, Cluster: "east", Action: schemas.ActionApply, Sequence: 7, ResourceVersion: "41"},
			"PyTorchJob.kubeflow.org/ml/train Apply applied on east (sequence 7, resourceVersion 41)"},
		// A Delete leaves no object, so no resourceVersion: the line does not show an empty one.
		{&schemas.PlacementApplied{Workload: jobRef, Cluster: "east", Action: schemas.ActionDelete, Sequence: 8},
			"PyTorchJob.kubeflow.org/ml/train Delete applied on east (sequence 8)"},
	}
	for _, tt := range tests {
		if got := (AuditRecord{Payload: tt.payload}).Summary(); got != tt.want {
			t.Errorf("Summary() = %q, want %q", got, tt.want)
		}
	}
}

// placedVerdictOfJob is the Placed verdict of PyTorchJob ns/job, as an event, and its subject.
func placedVerdictOfJob(t *testing.T) (string, cloudevents.Event) {
	t.Helper()
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ns", Name: "job", UID: "u1"}
	verdict := &schemas.PlacementVerdict{Workload: ref, Sequence: 1, Status: schemas.VerdictPlaced, Clusters: []string{"a"}}
	event, err := codec.NewEvent(schemas.TypePlacementVerdict, "/test", schemas.VerdictSubject(ref), "v1", verdict)
	if err != nil {
		t.Fatal(err)
	}
	return schemas.VerdictSubject(ref), event
}
