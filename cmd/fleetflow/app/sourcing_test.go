package app_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestStateStreamCopiesEverythingFromTheStart: the state stream copies every event and decision published
// right after the streams are created, whichever source starts copying first. A source that has copied
// nothing when its consumer is set up used to start at the time of the state stream's last message once that
// stream had dropped its first one (a newer message on the same subject replaced it), skipping everything its
// origin held before; this pattern lost one source's messages in nearly every round.
func TestStateStreamCopiesEverythingFromTheStart(t *testing.T) {
	for round := range 4 {
		t.Run("round "+strconv.Itoa(round), func(t *testing.T) {
			ctx := t.Context()
			b := app.OpenTestBus(t)
			published := 0
			publish := func(eventType, subject string, payload schemas.Payload) {
				t.Helper()
				published++
				app.PublishEvent(t, b, eventType, subject, subject+"/"+strconv.Itoa(published), payload)
			}
			job := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "uid-web"}
			subjects := map[string]bool{}
			for i := range 6 {
				// Every event subject gets two messages, so the state stream soon drops its first ones.
				cluster := "c" + strconv.Itoa(i)
				for range 2 {
					publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject(cluster),
						&schemas.ClusterHeartbeat{Cluster: cluster, Time: time.Now()})
				}
				subjects[schemas.ClusterHeartbeatSubject(cluster)] = true
				publish(schemas.TypePlacementDecided, schemas.DecisionSubject(cluster, job), &schemas.PlacementDecided{
					DecisionID: "d" + cluster, Workload: job, Cluster: cluster, Action: schemas.ActionDelete, Sequence: uint64(i + 1)})
				subjects[schemas.DecisionSubject(cluster, job)] = true
			}
			state, err := b.JetStream.Stream(ctx, schemas.StreamState)
			if err != nil {
				t.Fatal(err)
			}
			missing := func() []string {
				var out []string
				for subject := range subjects {
					if _, err := state.GetLastMsgForSubject(ctx, subject); err != nil {
						out = append(out, subject)
					}
				}
				return out
			}
			deadline := time.Now().Add(10 * time.Second)
			for len(missing()) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the state stream never copied %v", missing())
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
