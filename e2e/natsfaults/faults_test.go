package natsfaults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/applier"
	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/e2e/scenarios"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/schemas"
)

const (
	// burst is how many workloads each test submits; the fleet file has room for all of them.
	burst = 500
	// converge bounds the wait for every workload to be placed and applied once the killed node is back: 500
	// workloads go through three apiservers and a replicated stream on two loaded cores.
	converge = 3 * e2eenv.Settle
)

// victim picks the NATS node a test kills.
type victim struct {
	name string
	pick func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) int
}

// TestNodeKilledMidBurst kills a NATS node with SIGKILL after a third of a burst of workloads has been submitted
// and starts it again after two thirds: a node no stream of the pipeline's path is led by, the node that
// leads the decisions stream (its replicas elect a new leader while the placer publishes and the appliers
// consume), or the meta leader. Every workload is placed exactly once, applied once, and the run converges.
func TestNodeKilledMidBurst(t *testing.T) {
	tests := []victim{
		{"follower", func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) int {
			events, decisions := streamLeader(t, e, c, schemas.StreamEvents), streamLeader(t, e, c, schemas.StreamDecisions)
			meta, err := c.MetaLeader(t.Context())
			if err != nil {
				meta = -1
			}
			// Best a node that leads nothing; else (three leaderships on three nodes) one that leads neither
			// stream. Among those, the node the pipeline is connected to, so that it must reconnect too.
			var free, followers []int
			for i := range c.Size() {
				if i != events && i != decisions {
					followers = append(followers, i)
					if i != meta {
						free = append(free, i)
					}
				}
			}
			candidates := free
			if len(candidates) == 0 {
				candidates = followers
			}
			if len(candidates) == 0 {
				t.Fatalf("every node leads a stream (events: %d, decisions: %d)", events, decisions)
			}
			for _, i := range candidates {
				if c.NodeName(i) == e.Bus.Conn.ConnectedServerName() {
					return i
				}
			}
			return candidates[0]
		}},
		{"decisions leader", func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) int {
			return streamLeader(t, e, c, schemas.StreamDecisions)
		}},
		{"meta leader", func(t *testing.T, _ *e2eenv.Env, c *natscluster.Cluster) int {
			// The JetStream meta group's leader: stream and consumer changes (the placer's lease bucket, a
			// consumer recreated) wait for a new one.
			meta, err := c.MetaLeader(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			return meta
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Over TLS, clients and routes, as production clusters run.
			certs, err := natscluster.GenerateTLS(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			nats := natscluster.ForTest(t, 3, natscluster.WithTLS(certs))
			runBurst(t, fmt.Sprintf("faults-%d", i), nats, bus.ClientAuth{TLSCAFile: certs.CAFile}, killing(tt))
		})
	}
}

// fault is what a test does to the NATS cluster in the middle of a burst.
type fault struct {
	name string
	// start begins the fault once a third of the burst is submitted. What it returns ends the fault after two
	// thirds, returning once the cluster is whole again.
	start func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) (end func())
}

// killing kills the victim's node with SIGKILL, and ends the fault by starting it again on its store.
func killing(v victim) fault {
	return fault{name: v.name, start: func(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster) func() {
		killed := v.pick(t, e, c)
		t.Logf("killing NATS node %s (%s; the pipeline is connected to %s)", c.NodeName(killed), v.name,
			e.Bus.Conn.ConnectedServerName())
		if err := c.Kill(killed); err != nil {
			t.Fatal(err)
		}
		killedAt := time.Now()
		return func() {
			t.Logf("restarting NATS node %s", c.NodeName(killed))
			ctx, cancel := context.WithTimeout(t.Context(), natscluster.ReadyTimeout)
			defer cancel()
			if err := c.Restart(ctx, killed); err != nil {
				t.Fatal(err)
			}
			t.Logf("NATS node %s back and caught up after %s down", c.NodeName(killed), time.Since(killedAt).Round(time.Millisecond))
		}
	}}
}

// runBurst runs the pipeline on nats (reached with auth) and submits a burst of workloads into namespace ns, with f
// started after a third and ended after two thirds of them. Every workload must be placed exactly once, applied
// once, and the run converge.
func runBurst(t *testing.T, ns string, nats *natscluster.Cluster, auth bus.ClientAuth, f fault) {
	e := e2eenv.New(t, e2eenv.Options{FleetFile: fleetFile, CRDFiles: []string{"testdata/crds/pytorchjobs.yaml"},
		PolicyFiles: []string{"testdata/policies/binpack.yaml"}, CleanKinds: []schema.GroupVersionKind{scenarios.PyTorchJobKind},
		NATS: nats.ClientURLs(), StreamReplicas: 3, NATSAuth: auth})

	// A client that is not rate limited, so the burst is a burst.
	cfg := localfleettest.Fleet(t).ControlPlane.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tiny := scenarios.Replicas{Count: 1, CPU: "10m", Memory: "16Mi"}
	name := func(i int) string { return "job-" + strconv.Itoa(i) }

	var submitted atomic.Int64
	jobs := make(chan int)
	errs := make(chan error, burst)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range jobs {
				errs <- clients.Apply(context.Background(), e2eenv.FieldManager, scenarios.PyTorchJob(ns, name(i), tiny, tiny))
				submitted.Add(1)
			}
		})
	}
	var end func()
	var endedAt time.Time
	for i := range burst {
		switch i {
		case burst / 3:
			t.Logf("fault %q after %d submissions", f.name, submitted.Load())
			end = f.start(t, e, nats)
		case 2 * burst / 3:
			t.Logf("ending fault %q after %d submissions", f.name, submitted.Load())
			end()
			endedAt = time.Now()
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	// Converged: every job annotated Placed on the control plane and its copy on that cluster.
	var pending int
	e2eenv.Eventually(t, converge, "every workload placed and applied", func() bool {
		pending = 0
		copies := copiesByName(t, e, ns)
		for _, obj := range e2eenv.List(t, e.ControlPlane, scenarios.PyTorchJobKind) {
			if obj.GetNamespace() != ns {
				continue
			}
			a := obj.GetAnnotations()
			if a[schemas.AnnotationPlacement] != string(schemas.VerdictPlaced) || len(copies[obj.GetName()]) != 1 ||
				copies[obj.GetName()][0] != a[schemas.AnnotationCluster] {
				pending++
			}
		}
		return pending == 0
	})
	t.Logf("converged %s after the fault ended", time.Since(endedAt).Round(time.Millisecond))

	checkExactlyOnce(t, e, ns, burst, name)
}

// streamLeader is the node that leads stream, waiting out an election.
func streamLeader(t *testing.T, e *e2eenv.Env, c *natscluster.Cluster, stream string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), e2eenv.Settle)
	defer cancel()
	leader := -1
	if err := natscluster.Poll(ctx, "a leader of "+stream, func() error {
		var err error
		leader, err = c.StreamLeader(ctx, e.Bus.JetStream, stream)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return leader
}

// copiesByName lists, per workload name in ns, the clusters holding a copy of it.
func copiesByName(t *testing.T, e *e2eenv.Env, ns string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for cluster, clients := range e.Clusters {
		for _, obj := range e2eenv.List(t, clients, scenarios.PyTorchJobKind) {
			if obj.GetNamespace() == ns {
				out[obj.GetName()] = append(out[obj.GetName()], cluster)
			}
		}
	}
	return out
}

// history is what the streams hold about the workloads of one namespace.
type history struct {
	applies  map[string][]*schemas.PlacementDecided // workload name -> its Apply decisions
	outcomes map[string]int                         // decision id -> stored Applied outcomes
	failed   []*schemas.PlacementFailed
}

// readHistory reads both streams whole, as an auditor would.
func readHistory(t *testing.T, e *e2eenv.Env, ns string) history {
	t.Helper()
	h := history{applies: map[string][]*schemas.PlacementDecided{}, outcomes: map[string]int{}}
	err := audit.AuditTail(t.Context(), e.Bus.JetStream, audit.AuditQuery{}, func(r audit.AuditRecord) error {
		if r.Err != nil {
			t.Errorf("unreadable record %s/%d: %v", r.Stream, r.Sequence, r.Err)
			return nil
		}
		switch p := r.Payload.(type) {
		case *schemas.PlacementDecided:
			if p.Workload.Namespace == ns && p.Action == schemas.ActionApply {
				h.applies[p.Workload.Name] = append(h.applies[p.Workload.Name], p)
			}
		case *schemas.PlacementApplied:
			if p.Workload.Namespace == ns {
				h.outcomes[p.DecisionID]++
			}
		case *schemas.PlacementFailed:
			if p.Workload.Namespace == ns {
				h.failed = append(h.failed, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read the streams: %v", err)
	}
	return h
}

// reported counts the Apply decisions of h that have an Applied outcome stored.
func (h history) reported() int {
	n := 0
	for _, decided := range h.applies {
		for _, d := range decided {
			if h.outcomes[d.DecisionID] > 0 {
				n++
			}
		}
	}
	return n
}

// checkExactlyOnce checks, from the clusters and the streams, that each of the n workloads was decided once
// (one Apply decision, to the cluster its copy is on), that decision was applied once (one stored outcome),
// and the copy carries its sequence.
func checkExactlyOnce(t *testing.T, e *e2eenv.Env, ns string, n int, name func(int) string) {
	t.Helper()
	// The outcomes come last: an applier's report of a decision may wait for a retry.
	var h history
	ctx, cancel := context.WithTimeout(t.Context(), converge)
	defer cancel()
	if err := natscluster.Poll(ctx, "an Applied outcome for every decision", func() error {
		h = readHistory(t, e, ns)
		if got := h.reported(); got < n {
			return fmt.Errorf("%d of %d decisions reported applied", got, n)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	for _, p := range h.failed {
		t.Errorf("decision %s for %s on %s failed: %s", p.DecisionID, p.Workload.Name, p.Cluster, p.Error)
	}
	copies := map[string]map[string]string{} // name -> cluster -> decision-sequence annotation
	for cluster, clients := range e.Clusters {
		for _, obj := range e2eenv.List(t, clients, scenarios.PyTorchJobKind) {
			if obj.GetNamespace() != ns {
				continue
			}
			if copies[obj.GetName()] == nil {
				copies[obj.GetName()] = map[string]string{}
			}
			copies[obj.GetName()][cluster] = obj.GetAnnotations()[applier.AnnotationDecisionSequence]
		}
	}
	if len(copies) != n {
		t.Errorf("%d workloads have copies, want %d", len(copies), n)
	}
	for i := range n {
		job := name(i)
		decided := h.applies[job]
		if len(decided) != 1 {
			t.Errorf("%s: %d Apply decisions, want 1", job, len(decided))
			continue
		}
		d := decided[0]
		if len(copies[job]) != 1 {
			t.Errorf("%s: copies on %v, want one on %s", job, copies[job], d.Cluster)
			continue
		}
		mark, ok := copies[job][d.Cluster]
		if !ok {
			t.Errorf("%s: copy on %v, but decided for %s", job, copies[job], d.Cluster)
			continue
		}
		if want := applier.SequenceAnnotation(d); mark != want {
			t.Errorf("%s: copy carries decision %q, want %q", job, mark, want)
		}
		if got := h.outcomes[d.DecisionID]; got != 1 {
			t.Errorf("%s: decision %s has %d Applied outcomes stored, want 1", job, d.DecisionID, got)
		}
	}
}
