package model_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/consumers/ui/model"
	"github.com/fleetflow/fleetflow/consumers/ui/model/modeltest"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// eventually polls cond until it returns nil, failing with its last error after 10s.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFollowReadsTheStateThenTheLiveStreams: on a real JetStream, what was stored before Follow starts comes from
// the state stream, and what is stored after reaches the live feed.
func TestFollowReadsTheStateThenTheLiveStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server")
	}
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, js, err := bus.Connect(srv.ClientURL(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx := t.Context()
	if err := bus.ProvisionStreams(ctx, js, streams.DefaultOptions(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(js)
	n := 0
	publish := func(eventType, subject string, p schemas.Payload) {
		t.Helper()
		n++
		e, err := codec.NewEvent(eventType, "/test", subject, fmt.Sprintf("id-%d", n), p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, subject, e); err != nil {
			t.Fatal(err)
		}
	}
	publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "g1"), modeltest.Node("east", "g1", 64, 512, 8, 3))
	job := eventtest.Object("kubeflow.org/v1", "PyTorchJob", "team-a", "train", nil, map[string]any{"spec": map[string]any{}})
	publish(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(job.Ref()), job)
	// Follow starts once the state stream has copied them.
	eventually(t, "the state stream's copies", func() error {
		s, err := js.Stream(ctx, schemas.StreamState)
		if err != nil {
			return err
		}
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs < 3 {
			return fmt.Errorf("%d messages copied", info.State.Msgs)
		}
		return nil
	})

	m := model.New(model.Options{})
	entries, stop := m.Subscribe()
	defer stop()
	followCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- model.Follow(followCtx, js, m, slog.New(slog.DiscardHandler)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow ended with %v", err)
		}
	})
	eventually(t, "the state read", func() error {
		if !m.Synced() {
			return fmt.Errorf("not synced")
		}
		if c := m.Clusters(); len(c) != 1 || !c[0].Ready || c[0].GPUNodes != 1 {
			return fmt.Errorf("clusters %+v", c)
		}
		if _, ok := m.Workload(job.Ref().Key()); !ok {
			return fmt.Errorf("no workload %s", job.Ref().Key())
		}
		return nil
	})

	verdict := modeltest.Verdict("team-a", "train", 1, 2, 8, []string{"east"}, nil)
	verdict.Workload = job.Ref()
	publish(schemas.TypePlacementVerdict, schemas.VerdictSubject(job.Ref()), verdict)
	select {
	case e := <-entries:
		if e.What != "Placed" || e.Workload != job.Ref().Key() {
			t.Errorf("live entry %+v, want the Placed verdict of %s", e, job.Ref().Key())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the verdict stored after Follow started never reached the live feed")
	}
	if d, _ := m.Workload(job.Ref().Key()); d.Workload.Verdict != "Placed" {
		t.Errorf("verdict %q, want Placed", d.Workload.Verdict)
	}
}
