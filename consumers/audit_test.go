package consumers

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestAuditTailLeavesNoConsumers: every audit reads through ordered consumers; each must be gone from the
// server when the audit returns, or audits run in a loop would fill the streams' consumer limit.
func TestAuditTailLeavesNoConsumers(t *testing.T) {
	ctx := context.Background()
	server, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Shutdown()
	nc, js, err := bus.Connect(server.ClientURL(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := bus.ProvisionStreams(ctx, js, schemas.DefaultStreamOptions(), slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatal(err)
	}
	ref := schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "ns", Name: "job", UID: "u1"}
	verdict := &schemas.PlacementVerdict{Workload: ref, Sequence: 1, Status: schemas.VerdictPlaced, Clusters: []string{"a"}}
	event, err := schemas.NewEvent(schemas.TypePlacementVerdict, "/test", schemas.VerdictSubject(ref), "v1", verdict)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewPublisher(js).Publish(ctx, schemas.VerdictSubject(ref), event); err != nil {
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
