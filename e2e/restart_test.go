package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestPlacerRestartLosesNothing kills the placer while jobs are being submitted and starts a new one
// that knows nothing but the streams. Every job ends up placed exactly once: no job is lost, no decision
// is published twice, and no job is ever sent to two clusters. The jobs fill the fleet's 16 GPUs (2 each), and
// no kubelet reports their pods, so only the reservations hold their room: the new placer holds again those of
// the jobs the first one placed, and a job more finds no room. Before, a restored placement held none, and ten
// jobs were all placed on room for eight.
func TestPlacerRestartLosesNothing(t *testing.T) {
	e := e2eenv.New(t, func() e2eenv.Options { o := options(); o.NoPlacer = true; return o }())
	ctx := t.Context()
	const jobs = 8
	startPlacer := func() (stop func()) {
		placerCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- app.RunPlacer(placerCtx, e.Bus, e2eenv.PlacerConfig(), e.Log) }()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("placer ended with %v", err)
			}
		}
	}
	submit := func(i int) {
		job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
		job.SetNamespace("team-restart")
		job.SetName(fmt.Sprintf("job-%02d", i))
		if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
			t.Fatal(err)
		}
	}

	stopFirst := startPlacer()
	for i := range jobs / 2 {
		submit(i)
	}
	// Kill the first placer as soon as it has decided something, while the rest is still coming.
	e2eenv.Eventually(t, e2eenv.Settle, "a first decision", func() bool { return countDecisions(t, e) > 0 })
	stopFirst()
	for i := jobs / 2; i < jobs; i++ {
		submit(i)
	}
	stopSecond := startPlacer()
	defer stopSecond()

	for i := range jobs {
		name := fmt.Sprintf("job-%02d", i)
		e2eenv.Eventually(t, e2eenv.Settle, name+" placed and landed", func() bool {
			obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-restart", name)
			cluster := obj.GetAnnotations()[schemas.AnnotationCluster]
			if obj.GetAnnotations()[schemas.AnnotationPlacement] != string(schemas.VerdictPlaced) || e.Clusters[cluster] == nil {
				return false
			}
			return e2eenv.Get(t, e.Clusters[cluster], pytorchJobKind, "team-restart", name) != nil
		})
	}

	submit(jobs)
	overflow := fmt.Sprintf("job-%02d", jobs)
	e2eenv.Eventually(t, e2eenv.Settle, overflow+" Unschedulable: the fleet's GPUs are all held", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-restart", overflow)
		return obj != nil && obj.GetAnnotations()[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable)
	})

	applies := map[string]map[string]int{} // workload uid -> cluster -> Apply decisions for one object version
	clusters := map[string]map[string]bool{}
	for _, d := range allDecisions(t, e) {
		if d.Workload.Namespace != "team-restart" || d.Action != schemas.ActionApply {
			continue
		}
		key := d.Workload.UID + "@" + schemas.ResourceVersionOf(d.Object)
		if applies[key] == nil {
			applies[key] = map[string]int{}
		}
		applies[key][d.Cluster]++
		if clusters[d.Workload.UID] == nil {
			clusters[d.Workload.UID] = map[string]bool{}
		}
		clusters[d.Workload.UID][d.Cluster] = true
	}
	if len(clusters) != jobs {
		t.Errorf("%d jobs got Apply decisions, want %d", len(clusters), jobs)
	}
	for key, perCluster := range applies {
		for cluster, n := range perCluster {
			if n != 1 {
				t.Errorf("%s: %d Apply decisions to %s for the same object version, want 1", key, n, cluster)
			}
		}
	}
	for uid, cs := range clusters {
		if len(cs) != 1 {
			t.Errorf("workload %s was sent to %d clusters: %v", uid, len(cs), cs)
		}
	}
}

func countDecisions(t *testing.T, e *e2eenv.Env) uint64 {
	t.Helper()
	return e2eenv.Total(e2eenv.ClusterDecisions(t, e.Bus.JetStream))
}

// allDecisions reads every decision in the decisions stream.
func allDecisions(t *testing.T, e *e2eenv.Env) []*schemas.PlacementDecided {
	t.Helper()
	ctx := t.Context()
	consumer, err := e.Bus.JetStream.OrderedConsumer(ctx, schemas.StreamDecisions,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{schemas.SubjectClusterDecisions}})
	if err != nil {
		t.Fatal(err)
	}
	total := countDecisions(t, e)
	var out []*schemas.PlacementDecided
	for uint64(len(out)) < total {
		batch, err := consumer.Fetch(int(total) - len(out))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			event, err := bus.Decode(msg.Headers(), msg.Data())
			if err != nil {
				t.Fatal(err)
			}
			payload, err := codec.DecodePayload(event)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, payload.(*schemas.PlacementDecided))
		}
		if batch.Error() != nil {
			t.Fatal(batch.Error())
		}
	}
	return out
}
