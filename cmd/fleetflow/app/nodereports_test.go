package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestPlacerRefusesNodeReportsOverTheirClustersBudget: a cluster that reports its nodes beyond its budget has
// the rest refused unread, counted by cluster, and recorded in one dead letter naming the cluster and the
// bound; the events behind them are taken as usual, so a workload published after the flood is placed.
func TestPlacerRefusesNodeReportsOverTheirClustersBudget(t *testing.T) {
	f := newStateFixture(t)
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	f.seedFleet() // east's two nodes: two reports of a burst of four
	// No refill worth counting within the test: what is refused follows from the burst alone.
	cfg := placer.PlacerConfig{NodeReportRate: 1e-9, NodeReportBurst: 4}
	done := make(chan error, 1)
	go func() { done <- app.RunPlacer(ctx, f.b, cfg, slog.New(slog.DiscardHandler)) }()

	refusedBefore := refusedReports(t, "east")
	const flood = 10
	for i := range flood {
		f.publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), fmt.Sprintf("n1-flood-%d", i),
			&schemas.NodeState{Cluster: "east", Name: "n1", Ready: true, Allocatable: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(fmt.Sprint(9 + i)), corev1.ResourcePods: resource.MustParse("110")}})
	}
	web := deployment("web")
	f.publish(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(web.Ref()), "changed-web", web)
	eventually(t, "web placed on east, behind the refused reports", f.holds(web.Ref(), schemas.DecisionSubject("east", web.Ref())))

	stream, consumerCfg := streams.PlacerConsumer()
	eventually(t, "every event settled", func() bool {
		c, err := f.b.JetStream.Consumer(ctx, stream, consumerCfg.Durable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	if got := refusedReports(t, "east") - refusedBefore; got != flood-2 {
		t.Errorf("refused %v of east's reports, want %d: the burst of 4 less the 2 of the seed", got, flood-2)
	}
	dead, err := f.b.JetStream.Stream(ctx, schemas.StreamDead)
	if err != nil {
		t.Fatal(err)
	}
	info, err := dead.Info(ctx, jetstream.WithSubjectFilter(schemas.SubjectAllDead))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("%d dead letters, want one for all of east's refused reports", info.State.Msgs)
	}
	letter, err := dead.GetLastMsgForSubject(ctx, schemas.DeadLetterSubject(schemas.ConsumerPlacer))
	if err != nil {
		t.Fatal(err)
	}
	reason, detail := letter.Header.Get(schemas.HeaderDeadReason), letter.Header.Get(schemas.HeaderDeadError)
	if reason != schemas.DeadRefused || !strings.Contains(detail, "cluster east") || !strings.Contains(detail, "budget of 1e-09 a second (burst 4)") ||
		letter.Header.Get(schemas.HeaderDeadSubject) != schemas.NodeSubject("east", "n1") {
		t.Errorf("dead letter on %s: reason %q, error %q; want %q naming east and its budget", letter.Header.Get(schemas.HeaderDeadSubject),
			reason, detail, schemas.DeadRefused)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("placer ended with %v", err)
	}
}

// refusedReports reads fleetflow_node_reports_refused_total of cluster from the process's registry.
func refusedReports(t *testing.T, cluster string) float64 {
	t.Helper()
	families, err := observe.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != "fleetflow_node_reports_refused_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			for _, label := range m.GetLabel() {
				if label.GetName() == "cluster" && label.GetValue() == cluster {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
