package natscluster_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestPartsReachATLSCluster: on a 3-node cluster whose clients and routes need TLS (certificates as a
// cert-manager Secret names them), a part given the CA (--nats-tls-ca) provisions fleetflow's streams at 3
// replicas and stores and reads an event; one without it is refused on the server's certificate.
func TestPartsReachATLSCluster(t *testing.T) {
	files, err := natscluster.GenerateTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := natscluster.ForTest(t, 3, natscluster.WithTLS(files))
	ctx := t.Context()

	if _, _, err := bus.Connect(c.ClientURLs(), "no-ca", nats.MaxReconnects(0)); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a part without the CA connected, or failed otherwise: %v", err)
	}

	auth, err := bus.ClientAuth{TLSCAFile: files.CAFile}.Options()
	if err != nil {
		t.Fatal(err)
	}
	nc, js, err := bus.Connect(c.ClientURLs(), "with-ca", auth...)
	if err != nil {
		t.Fatalf("a part with the CA: %v", err)
	}
	t.Cleanup(nc.Close)
	if !nc.TLSRequired() {
		t.Fatal("the connection is not TLS")
	}
	opts := streams.DefaultOptions()
	opts.Replicas = 3
	if err := bus.ProvisionStreams(ctx, js, opts, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Fatalf("provision the streams at 3 replicas over TLS: %v", err)
	}
	hb := &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()}
	e, err := codec.NewEvent(schemas.TypeClusterHeartbeat, "/test", schemas.ClusterHeartbeatSubject("east"), "hb-1", hb)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := bus.NewPublisher(js).Publish(ctx, schemas.ClusterHeartbeatSubject("east"), e)
	if err != nil {
		t.Fatalf("publish over TLS: %v", err)
	}
	last, err := bus.NewPublisher(js).LastStored(ctx, schemas.StreamEvents, schemas.ClusterHeartbeatSubject("east"))
	if err != nil || last != ack.Sequence {
		t.Fatalf("last stored on the heartbeat subject = %d, %v; want %d", last, err, ack.Sequence)
	}
}
