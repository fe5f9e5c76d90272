package app_test

import (
	"testing"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestSupersededComparesWithTheSubjectsLastMessage: a message is superseded exactly when its subject holds a
// later one; messages on other subjects, and subjects with nothing stored, do not count.
func TestSupersededComparesWithTheSubjectsLastMessage(t *testing.T) {
	ctx := t.Context()
	b := app.OpenTestBus(t)
	web := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "uid-web"}
	api := web
	api.Name, api.UID = "api", "uid-api"
	publish := func(ref schemas.ObjectRef, seq uint64, action schemas.DecisionAction) uint64 {
		t.Helper()
		d := &schemas.PlacementDecided{DecisionID: ref.UID + "/" + string(action), Workload: ref, Cluster: "east", Action: action, Sequence: seq}
		if action == schemas.ActionApply {
			d.Object = map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind,
				"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace}}
		}
		return app.PublishEvent(t, b, schemas.TypePlacementDecided, schemas.DecisionSubject("east", ref), d.DecisionID, d)
	}
	apply := publish(web, 1, schemas.ActionApply)
	del := publish(web, 2, schemas.ActionDelete)
	other := publish(api, 3, schemas.ActionApply)

	decisions, err := b.JetStream.Stream(ctx, schemas.StreamDecisions)
	if err != nil {
		t.Fatal(err)
	}
	superseded := app.Superseded(decisions)
	for _, tc := range []struct {
		name    string
		subject string
		seq     uint64
		want    bool
	}{
		{"an Apply followed by a Delete", schemas.DecisionSubject("east", web), apply, true},
		{"the Delete, last on its subject", schemas.DecisionSubject("east", web), del, false},
		{"the last on another subject", schemas.DecisionSubject("east", api), other, false},
		{"a subject with nothing stored", schemas.DecisionSubject("west", web), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := superseded(ctx, tc.subject, tc.seq)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("superseded = %t, want %t", got, tc.want)
			}
		})
	}
}
