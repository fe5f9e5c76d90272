package scenarios

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestBurstDoesNotOvercommit submits 20 identical gang jobs at once to a fleet that fits exactly K of them
// at node level. Exactly K are Placed and 20-K Unschedulable, and the reservations of the placed ones
// never ask more of a node than it has.
//
// K, worked out from fleets/burst.yaml. A job is a master (1 CPU, no GPU) and 2 workers of 2 GPUs each,
// and goes whole to one cluster. CPU (64 per node), memory and pods are far from binding: a cluster-b
// node holding 4 workers and 4 masters uses 12 CPUs and 40Gi. So GPUs decide:
//   - cluster-a: 3 nodes of 3 GPUs; a node fits floor(3/2) = 1 worker, so 3 worker slots, floor(3/2) = 1 job.
//   - cluster-b: 2 nodes of 8 GPUs; a node fits 4 workers, so 8 slots, 8/2 = 4 jobs.
//
// K = 1 + 4 = 5, so 15 are Unschedulable. (Counting cluster totals instead would give
// floor(9/4) + 16/4 = 6: the stranded GPU on each cluster-a node is what node-level fit sees.)
func TestBurstDoesNotOvercommit(t *testing.T) {
	const (
		ns         = "burst"
		submitted  = 20
		placedOnA  = 1
		placedOnB  = 4
		wantPlaced = placedOnA + placedOnB
	)
	e := newScenario(t, "testdata/fleets/burst.yaml", e2eenv.Options{
		PolicyFiles: []string{"testdata/policies/binpack.yaml"}, NoPlacer: true})
	placer := runPlacer(t, e)
	master := Replicas{Count: 1, CPU: "1", Memory: "2Gi"}
	worker := Replicas{Count: 2, CPU: "2", Memory: "8Gi", GPUs: 2}
	name := func(i int) string { return fmt.Sprintf("job-%02d", i) }

	// All at once: one goroutine per job, on a client that is not rate limited.
	cfg := localfleetControlPlaneConfig(t)
	cfg.QPS, cfg.Burst = 1000, 1000
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, submitted)
	start := make(chan struct{})
	for i := range submitted {
		wg.Go(func() {
			<-start
			errs <- clients.Apply(context.Background(), e2eenv.FieldManager, PyTorchJob(ns, name(i), master, worker))
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	placements := map[string]Placement{}
	e2eenv.Eventually(t, e2eenv.Settle, "a verdict for every job", func() bool {
		for i := range submitted {
			p := PlacementOf(t, e, ns, name(i))
			if p.Status == "" {
				return false
			}
			placements[name(i)] = p
		}
		return true
	})
	perCluster := map[string]int{}
	unschedulable := 0
	reasonA := regexp.MustCompile(`^pod worker .*\(nvidia\.com/gpu 2\) fits no node: largest free 1 on gpu3-[0-2]$`)
	for job, p := range placements {
		switch p.Status {
		case string(schemas.VerdictPlaced):
			perCluster[p.Cluster]++
		case string(schemas.VerdictUnschedulable):
			unschedulable++
			// cluster-a still has 5 GPUs free in total, more than the 4 a job needs, but one worker slot.
			if got := p.Reason("cluster-a"); !reasonA.MatchString(got) {
				t.Errorf("%s: reason for cluster-a %q, want one matching %s", job, got, reasonA)
			}
			// cluster-b's 16 GPUs are all held by its 4 jobs.
			if got, want := p.Reason("cluster-b"), "needs nvidia.com/gpu 4 in total, 0 free"; got != want {
				t.Errorf("%s: reason for cluster-b %q, want %q", job, got, want)
			}
		default:
			t.Errorf("%s: verdict %q", job, p.Status)
		}
	}
	if perCluster["cluster-a"] != placedOnA || perCluster["cluster-b"] != placedOnB || unschedulable != submitted-wantPlaced {
		t.Errorf("placed per cluster %v and %d Unschedulable, want cluster-a:%d cluster-b:%d and %d Unschedulable",
			perCluster, unschedulable, placedOnA, placedOnB, submitted-wantPlaced)
	}
	for job, p := range placements {
		if p.Status == string(schemas.VerdictPlaced) {
			WaitPlacedOn(t, e, ns, job, p.Cluster)
		}
	}
	countEvents(t, e, ns, placements)

	// What the placed jobs hold, node by node, against what each node has free in the fleet file.
	snap := placer.Snapshot()
	rt := snap.Resources()
	held := map[string]corev1.ResourceList{} // "cluster/node" -> sum of reserved requests
	for job, p := range placements {
		reservations := snap.ReservationsOf(structs.WorkloadID("kubeflow.org/v1", "PyTorchJob", ns, job))
		if p.Status != string(schemas.VerdictPlaced) {
			if len(reservations) > 0 {
				t.Errorf("%s is %s but holds %d reservations", job, p.Status, len(reservations))
			}
			continue
		}
		var pods int64
		for _, r := range reservations {
			for _, n := range r.Nodes {
				if n.Cluster != p.Cluster {
					t.Errorf("%s is placed on %s but reserves node %s of %s", job, p.Cluster, n.Node, n.Cluster)
				}
				pods += n.Pods
				key := n.Cluster + "/" + n.Node
				held[key] = addResources(held[key], rt.List(n.Request))
			}
		}
		if pods != 3 { // one master, two workers
			t.Errorf("%s reserves %d pods, want 3", job, pods)
		}
	}
	free := freePerNode(t, "testdata/fleets/burst.yaml")
	for node, sum := range held {
		for resource, amount := range sum {
			if have := free[node][resource]; amount.Cmp(have) > 0 {
				t.Errorf("node %s over-committed: %s reserved %s of %s free", node, resource, amount.String(), have.String())
			}
		}
	}
	if len(held) == 0 {
		t.Error("the placed jobs hold no reservations at all")
	}
}

// runPlacer runs the placer the way app.RunPlacer does (rebuild from the state stream, then the
// durable consumer), but keeps hold of it so the test can read the reservations in its fleet view. It
// leaves out RunPlacer's clock ticks, which only judge heartbeats, pending pods and expired
// reservations; none of those may change anything in this test, and without ticks no reservation can
// expire while the test reads them.
func runPlacer(t *testing.T, e *e2eenv.Env) *placer.Placer {
	t.Helper()
	log := e.Log.With("component", "placer")
	builtins, err := karta.Builtins()
	if err != nil {
		t.Fatal(err)
	}
	placer, err := placer.NewPlacer(e.Bus.Publisher, karta.NewRegistry(builtins...), e2eenv.PlacerConfig(), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := placer.Rebuild(ctx, e.Bus.JetStream); err != nil {
		cancel()
		t.Fatal(err)
	}
	stream, cfg := streams.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(ctx, e.Bus.JetStream, stream, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- (&bus.ConsumeLoop{Consumer: consumer, Handle: placer.Handle, Log: log}).Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("placer ended with %v", err)
		}
	})
	return placer
}

func addResources(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range []corev1.ResourceList{a, b} {
		for name, q := range l {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// freePerNode is allocatable minus requested of every node of a fleet file, keyed "cluster/node".
func freePerNode(t *testing.T, fleetFile string) map[string]corev1.ResourceList {
	t.Helper()
	out := map[string]corev1.ResourceList{}
	for _, c := range e2eenv.ReadFleetSpec(t, fleetFile).Clusters {
		for _, n := range c.AllNodes() {
			free := corev1.ResourceList{}
			for name, q := range n.Allocatable {
				left := q.DeepCopy()
				if used, ok := n.Requested[name]; ok {
					left.Sub(used)
				}
				free[name] = left
			}
			out[c.Name+"/"+n.Name] = free
		}
	}
	return out
}

// countEvents waits for the Events of the burst's jobs (Scheduled and Applied for a placed one, FailedScheduling
// for the others) and logs how many the control plane was written per job: a repeated reason on one job is
// folded into the first Event's series (one patch), so no job may have more than its two kinds of Event.
func countEvents(t *testing.T, e *e2eenv.Env, ns string, placements map[string]Placement) {
	t.Helper()
	want := func(p Placement) []string {
		if p.Status == string(schemas.VerdictPlaced) {
			return []string{"Scheduled", "Applied"}
		}
		return []string{"FailedScheduling"}
	}
	objects, writes := 0, 0
	for job, p := range placements {
		uid := e2eenv.Get(t, e.ControlPlane, PyTorchJobKind, ns, job).GetUID()
		var got []string
		var events []eventsv1.Event
		e2eenv.Eventually(t, e2eenv.Settle, fmt.Sprintf("Events %v of %s", want(p), job), func() bool {
			events = e2eenv.EventsAbout(t, e.ControlPlane, ns, uid)
			got = got[:0]
			for _, ev := range events {
				got = append(got, ev.Reason)
			}
			return slices.Equal(got, want(p))
		})
		for _, ev := range events {
			objects, writes = objects+1, writes+1
			if ev.Series != nil {
				writes++ // the patch that started the series
			}
		}
	}
	t.Logf("Events on %d jobs: %d objects, %d writes (%.2f per job)", len(placements), objects, writes,
		float64(writes)/float64(len(placements)))
}
