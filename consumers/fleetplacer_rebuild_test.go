package consumers

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestRebuildSurvivesALostPullRequest: a restarted placer whose first pull request on the state stream goes
// missing still reads the whole stream, pulling again once the heartbeats it asked for do not come.
func TestRebuildSurvivesALostPullRequest(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	producer, js, err := bus.Connect(srv.ClientURL(), "producer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(producer.Close)
	if err := bus.ProvisionStreams(ctx, js, schemas.DefaultStreamOptions(), log); err != nil {
		t.Fatal(err)
	}
	publish := func(eventType, subject string, payload schemas.Payload) {
		t.Helper()
		e, err := schemas.NewEvent(eventType, "/test", subject, subject, payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bus.NewPublisher(js).Publish(ctx, subject, e); err != nil {
			t.Fatal(err)
		}
	}
	policy := objectChanged("fleetflow.io/v1alpha1", "SchedulePolicy", "", "all", map[string]any{"spec": map[string]any{}})
	publish(schemas.TypePolicyChanged, schemas.PolicySubject(policy.Ref()), policy)
	cluster := objectChanged("fleetflow.io/v1alpha1", "Cluster", "", "east", map[string]any{
		"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": "east", "namespace": "fleetflow-system"}}})
	publish(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), cluster)
	publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	publish(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"), &schemas.ClusterAPIs{Cluster: "east", APIs: []string{"apps/v1/Deployment"}})
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), &schemas.NodeState{Cluster: "east", Name: "n1", Ready: true,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110")}})
	web := oneCPUDeployment("web")
	publish(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), web)

	state, err := js.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	for {
		info, err := state.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 6 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the state stream holds %d messages, want the 6 published", info.State.Msgs)
		case <-time.After(20 * time.Millisecond):
		}
	}

	dropper := bustest.StartPullDropper(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), 1)
	conn, placerJS, err := bus.Connect(dropper.URL(), "placer", nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlacer(bus.NewPublisher(placerJS), karta.NewRegistry(builtins...), PlacerConfig{}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Rebuild(ctx, placerJS); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if got := dropper.Dropped(); got != 1 {
		t.Errorf("%d pull requests dropped, want the first one", got)
	}
	if p.clusters["east"] == nil || p.policies["all"] == nil || p.workloads[workloadIDOf(web.Ref())] == nil {
		t.Errorf("rebuilt view misses what the state stream holds: clusters %d, policies %d, workloads %d",
			len(p.clusters), len(p.policies), len(p.workloads))
	}
}
