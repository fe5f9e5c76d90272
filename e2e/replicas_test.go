package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestProducerReplicasAreDeduplicated runs a second control-plane producer next to the pipeline's. Both
// publish every change; JetStream's dedupe stores each event id once, and the placer decides once.
func TestProducerReplicasAreDeduplicated(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	kinds, err := app.BuiltinKinds()
	if err != nil {
		t.Fatal(err)
	}
	replicaCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- app.RunProducer(replicaCtx, e.Bus, e.ControlPlane, kinds, app.DefaultSkipped(), e.Log.With("replica", "second"))
	}()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("second producer ended with %v", err)
		}
	}()

	// Submit only once both producers watch the kind, so both see the same version.
	e2eenv.Eventually(t, e2eenv.Settle, "both producers watching PyTorchJobs", func() bool {
		n := 0
		for _, line := range strings.Split(e.Logs.String(), "\n") {
			if strings.Contains(line, "msg=watching") && strings.Contains(line, "component=producer") &&
				strings.Contains(line, `kind="kubeflow.org/v1, Kind=PyTorchJob"`) {
				n++
			}
		}
		return n >= 2
	})
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace("team-replicas")
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	var placedOn string
	e2eenv.Eventually(t, e2eenv.Settle, "the job placed", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-replicas", job.GetName())
		placedOn = obj.GetAnnotations()[schemas.AnnotationCluster]
		return placedOn != "" && e2eenv.Get(t, e.Clusters[placedOn], pytorchJobKind, "team-replicas", job.GetName()) != nil
	})
	ref := schemas.RefOf(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-replicas", job.GetName()).Object)
	// Both producers publish the submission: the same version under the same id, which JetStream stores
	// once, or, when the second lists the object after fleetflow annotated it, a newer version that differs
	// in nothing the placer copies.
	published := func(replica string) []string {
		var lines []string
		for _, line := range strings.Split(e.Logs.String(), "\n") {
			if strings.Contains(line, "subject="+schemas.WorkloadSubject(ref)+" ") && strings.Contains(line, "msg=published") &&
				strings.Contains(line, "replica=second") == (replica == "second") {
				lines = append(lines, line)
			}
		}
		return lines
	}
	e2eenv.Eventually(t, e2eenv.Settle, "both producers published the submission", func() bool {
		return len(published("first")) > 0 && len(published("second")) > 0
	})
	t.Logf("second producer: %v", published("second"))
	stream, err := e.Bus.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(schemas.WorkloadSubject(ref)))
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]int{}
	consumer, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{schemas.WorkloadSubject(ref)}})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := consumer.Fetch(int(info.State.Subjects[schemas.WorkloadSubject(ref)]))
	if err != nil {
		t.Fatal(err)
	}
	for msg := range batch.Messages() {
		event, err := bus.Decode(msg.Headers(), msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		versions[event.ID()]++
	}
	for id, n := range versions {
		if n != 1 {
			t.Errorf("event %s stored %d times, want once", id, n)
		}
	}
	if len(versions) == 0 {
		t.Fatal("no workload event stored")
	}
	applies := 0
	for _, d := range allDecisions(t, e) {
		if d.Workload.UID == ref.UID && d.Action == schemas.ActionApply {
			applies++
		}
	}
	if applies != 1 {
		t.Errorf("%d Apply decisions for one submission, want 1", applies)
	}
}
