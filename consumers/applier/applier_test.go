package applier

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestStaleDecisionsAreJudgedWithinOneEpoch: a decision older than the one an object records is stale only
// when both come from the same streams; after the streams were recreated, sequences start over.
func TestStaleDecisionsAreJudgedWithinOneEpoch(t *testing.T) {
	cases := []struct {
		name     string
		recorded string
		decision schemas.PlacementDecided
		stale    bool
	}{
		{"older in the same epoch", "e1/10", schemas.PlacementDecided{Epoch: "e1", Sequence: 9}, true},
		{"same sequence is not stale (redelivery)", "e1/10", schemas.PlacementDecided{Epoch: "e1", Sequence: 10}, false},
		{"newer in the same epoch", "e1/10", schemas.PlacementDecided{Epoch: "e1", Sequence: 11}, false},
		{"older sequence of a new epoch", "e1/10", schemas.PlacementDecided{Epoch: "e2", Sequence: 3}, false},
		{"no epoch on either side", "10", schemas.PlacementDecided{Sequence: 9}, true},
		{"nothing recorded", "", schemas.PlacementDecided{Epoch: "e1", Sequence: 1}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: map[string]any{}}
			if tc.recorded != "" {
				obj.SetAnnotations(map[string]string{AnnotationDecisionSequence: tc.recorded})
			}
			if got := stale(obj, &tc.decision); got != tc.stale {
				t.Errorf("stale = %t, want %t", got, tc.stale)
			}
			// What the applier writes for a decision is judged not stale for that same decision.
			obj.SetAnnotations(map[string]string{AnnotationDecisionSequence: SequenceAnnotation(&tc.decision)})
			if stale(obj, &tc.decision) {
				t.Errorf("a decision is stale against its own annotation %q", SequenceAnnotation(&tc.decision))
			}
		})
	}
}

// TestApplierSkipsSupersededApplies: an Apply with a newer decision for the same workload on the cluster is
// skipped before the cluster is even read (this applier has no clients and no publisher to call), and a
// failure to tell is retried rather than guessed.
func TestApplierSkipsSupersededApplies(t *testing.T) {
	ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "uid-web"}
	decided := &schemas.PlacementDecided{DecisionID: "uid-web/5/Apply/east", Workload: ref, Cluster: "east",
		Action: schemas.ActionApply, Sequence: 5, Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "team"}}}
	d := delivery(t, 5, schemas.TypePlacementDecided, schemas.DecisionSubject("east", ref), decided)
	var asked []uint64
	a := &Applier{Cluster: "east", Log: slog.New(slog.DiscardHandler),
		Superseded: func(_ context.Context, subject string, seq uint64) (bool, error) {
			if subject != schemas.DecisionSubject("east", ref) {
				t.Errorf("asked about subject %s", subject)
			}
			asked = append(asked, seq)
			return true, nil
		}}
	if err := a.Handle(t.Context(), d); err != nil {
		t.Fatalf("superseded Apply: %v", err)
	}
	if len(asked) != 1 || asked[0] != 5 {
		t.Errorf("asked about sequences %v, want [5]", asked)
	}
	a.Superseded = func(context.Context, string, uint64) (bool, error) { return false, errors.New("stream unavailable") }
	if err := a.Handle(t.Context(), d); err == nil || bus.IsPermanent(err) {
		t.Errorf("error = %v, want a retryable error when the stream cannot tell", err)
	}
}

// TestApplierGivingUpSaysWhatHappened: a decision the applier could not carry out is reported failed; one it
// carried out but could not report (the report's publish failed every attempt) is reported applied, since a
// failure would make the placer move the workload off a cluster that runs it.
func TestApplierGivingUpSaysWhatHappened(t *testing.T) {
	tests := []struct {
		name  string
		cause error
		want  string
	}{
		{name: "not carried out", cause: errors.New("the server could not find the requested resource"), want: schemas.TypePlacementFailed},
		{name: "carried out, not reported", cause: reportError{err: errors.New("nats: timeout"), resourceVersion: "42"},
			want: schemas.TypePlacementApplied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			js := bustest.JetStream(t)
			ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "uid-web"}
			decided := &schemas.PlacementDecided{DecisionID: "uid-web/5/Apply/east", Workload: ref, Cluster: "east",
				Action: schemas.ActionApply, Sequence: 5, Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
					"metadata": map[string]any{"name": "web", "namespace": "team"}}}
			a := &Applier{Cluster: "east", Publisher: bus.NewPublisher(js), Log: slog.New(slog.DiscardHandler)}
			a.GiveUp(ctx, delivery(t, 5, schemas.TypePlacementDecided, schemas.DecisionSubject("east", ref), decided), tt.cause)
			events, err := js.Stream(ctx, schemas.StreamEvents)
			if err != nil {
				t.Fatal(err)
			}
			msg, err := events.GetLastMsgForSubject(ctx, schemas.PlacementSubject("east", ref))
			if err != nil {
				t.Fatalf("no report: %v", err)
			}
			if got := msg.Header.Get("ce-type"); got != tt.want {
				t.Errorf("reported %s, want %s", got, tt.want)
			}
		})
	}
}

func delivery(t *testing.T, seq uint64, eventType, subject string, payload schemas.Payload) bus.Delivery {
	t.Helper()
	e, err := codec.NewEvent(eventType, "/test", subject, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Event: e, Payload: payload, Subject: subject, StreamSequence: seq, Attempt: 1}
}
