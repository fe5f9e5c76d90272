package natsfaults

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/internal/netlab"
	"github.com/fleetflow/fleetflow/schemas"
)

// probeSubject is in the decisions stream, but no part of the pipeline reads it.
const probeSubject = schemas.SubjectDecisionsRoot + "._partition_probe"

// TestLeaderCutOffMidBurst runs each NATS node in a network namespace of its own and, a third into a burst of
// workloads, cuts off the node that leads the decisions stream and that the pipeline is connected to: its link
// goes down, so its peers and the pipeline lose it without their connections being reset. The cut-off leader
// must store nothing (a publish through it alone fails, and is not in the stream once healed); the other two
// elect a new leader, and the pipeline fails over to them. Healed after two thirds, the run must end as after a
// crash: every workload placed exactly once, applied once, converged.
func TestLeaderCutOffMidBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces and runs a burst through a partition")
	}
	lab := netlab.ForTest(t)
	hosts := make([]*netlab.Host, 3)
	for i := range hosts {
		var err error
		if hosts[i], err = lab.AddHost(); err != nil {
			t.Fatal(err)
		}
	}
	nats := natscluster.ForTest(t, 3, natscluster.WithHosts(hosts...))
	runBurst(t, "partition", nats, bus.ClientAuth{}, fault{name: "decisions leader cut off", start: cutDecisionsLeader(hosts)})
}

// cutDecisionsLeader moves the decisions stream's leadership to the node the pipeline is connected to and cuts
// that node off, checking that it stores nothing and that the majority elects another leader; the fault ends
// with the link up again and every node current.
func cutDecisionsLeader(hosts []*netlab.Host) func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) func() {
	return func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) func() {
		ctx, cancel := context.WithTimeout(t.Context(), e2eenv.Settle)
		defer cancel()
		cut := -1
		for i := range c.Size() {
			if c.NodeName(i) == e.Bus.Conn.ConnectedServerName() {
				cut = i
			}
		}
		if cut < 0 {
			t.Fatalf("the pipeline is connected to %q, no node of the cluster", e.Bus.Conn.ConnectedServerName())
		}
		if err := c.MoveStreamLeader(ctx, e.Bus.JetStream, schemas.StreamDecisions, cut); err != nil {
			t.Fatal(err)
		}
		if err := hosts[cut].Cut(); err != nil {
			t.Fatal(err)
		}
		cutAt := time.Now()
		t.Logf("cut off NATS node %s: it leads the decisions stream and the pipeline is connected to it", c.NodeName(cut))

		// A client on the cut-off side: the old leader cannot have the publish stored without a majority.
		probe, cancelProbe := context.WithTimeout(ctx, 5*time.Second)
		err := c.PublishVia(probe, cut, probeSubject, []byte("minority"), "partition-probe")
		cancelProbe()
		if err == nil {
			t.Fatalf("the cut-off leader %s stored a publish", c.NodeName(cut))
		}
		t.Logf("a publish through the cut-off leader alone failed: %v", err)
		if err := natscluster.Poll(ctx, "a decisions leader on the majority side", func() error {
			l, err := c.StreamLeader(ctx, e.Bus.JetStream, schemas.StreamDecisions)
			if err == nil && l == cut {
				return fmt.Errorf("the cut-off node %s still leads", c.NodeName(cut))
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("the majority elected a new decisions leader; the pipeline is connected to %s",
			e.Bus.Conn.ConnectedServerName())

		return func() {
			if err := hosts[cut].Heal(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), natscluster.ReadyTimeout)
			defer cancel()
			if err := c.WaitHealthy(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("NATS node %s healed and current after %s cut off", c.NodeName(cut), time.Since(cutAt).Round(time.Millisecond))
			decisions, err := e.Bus.JetStream.Stream(ctx, schemas.StreamDecisions)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := decisions.GetLastMsgForSubject(ctx, probeSubject); !errors.Is(err, jetstream.ErrMsgNotFound) {
				t.Errorf("the publish made through the cut-off leader: %v, want it not stored", err)
			}
		}
	}
}
