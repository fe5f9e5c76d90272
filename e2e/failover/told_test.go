package failover

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/e2e/scenarios"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestFailoverIsToldInEventsAndPlacements: what kubectl shows of a failover. The moved job's Events say, in
// order, that it was scheduled on cluster-a, applied there, failed over to cluster-b (naming cluster-a's
// NotReady), and applied there; a job that fits nowhere has FailedScheduling, its reasons summed up; the
// Cluster has NotReady; and the WorkloadPlacements of every PyTorchJob show its verdict and clusters.
func TestFailoverIsToldInEventsAndPlacements(t *testing.T) {
	e := e2eenv.New(t, e2eenv.Options{FleetFile: fleetFile, CRDFiles: []string{"testdata/crds/pytorchjobs.yaml"},
		PolicyFiles: []string{"testdata/policies/a-then-b.yaml"},
		Placer:      placer.PlacerConfig{HeartbeatTimeout: 6 * time.Second}})
	ctx := t.Context()
	const ns, moved, greedy = "told", "mover", "greedy"
	master := scenarios.Replicas{Count: 1, CPU: "1", Memory: "2Gi"}
	for name, worker := range map[string]scenarios.Replicas{
		moved:  {Count: 2, CPU: "2", Memory: "8Gi", GPUs: 1},
		greedy: {Count: 2, CPU: "2", Memory: "8Gi", GPUs: 8}, // 8 GPUs a pod: no node has more than 4
	} {
		if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, scenarios.PyTorchJob(ns, name, master, worker)); err != nil {
			t.Fatal(err)
		}
	}
	scenarios.WaitPlacedOn(t, e, ns, moved, "cluster-a")
	scenarios.WaitPlacement(t, e, ns, greedy, "Unschedulable", func(p scenarios.Placement) bool {
		return p.Status == string(schemas.VerdictUnschedulable)
	})
	waitEvents(t, e, ns, greedy, []string{"FailedScheduling"})
	if err := e.Fleet.StopCluster(ctx, "cluster-a"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Fleet.StartCluster(context.Background(), "cluster-a"); err != nil {
			t.Errorf("start cluster-a again: %v", err)
		}
	})
	scenarios.WaitPlacedOn(t, e, ns, moved, "cluster-b")

	events := waitEvents(t, e, ns, moved, []string{"Scheduled", "Applied", "FailedOver", "Applied"})
	for i, want := range []string{"Placed on cluster-a by policy a-then-b", "Applied to cluster cluster-a",
		"Failed over from cluster-a to cluster-b by policy a-then-b: cluster-a is not Ready", "Applied to cluster cluster-b"} {
		if !strings.HasPrefix(events[i].Note, want) {
			t.Errorf("Event %d (%s): note %q, want it to start %q", i, events[i].Reason, events[i].Note, want)
		}
		if events[i].ReportingController != "fleetflow.io/status-writer" {
			t.Errorf("Event %d (%s) reported by %q, want fleetflow.io/status-writer", i, events[i].Reason, events[i].ReportingController)
		}
	}
	failed := waitEvents(t, e, ns, greedy, []string{"FailedScheduling"})
	if want := "0/2 clusters are available: 2 Insufficient nvidia.com/gpu."; failed[0].Note != want {
		t.Errorf("FailedScheduling note %q, want %q", failed[0].Note, want)
	}
	cluster := e2eenv.Get(t, e.ControlPlane, clusterKind, "", "cluster-a")
	e2eenv.Eventually(t, e2eenv.Settle, "the Event NotReady on Cluster cluster-a", func() bool {
		return hasReason(e2eenv.EventsAbout(t, e.ControlPlane, metav1.NamespaceDefault, cluster.GetUID()), "NotReady")
	})

	// Every PyTorchJob on the control plane, this test's and those earlier tests left, has its placement.
	var mismatch string
	e2eenv.Eventually(t, e2eenv.Settle, "a WorkloadPlacement showing each PyTorchJob's verdict and clusters", func() bool {
		last := mismatch
		if mismatch = placementsMismatch(t, e); mismatch != "" && mismatch != last {
			t.Log(mismatch) // each new one, so a timeout shows the last
		}
		return mismatch == ""
	})
	p := placementOf(t, e, ns, moved)
	if p.Status.Verdict != "Placed" || p.Status.ClusterNames != "cluster-b" || p.Status.Policy != "a-then-b" ||
		p.Status.Workload.Kind != "PyTorchJob" || p.Status.LastDecision == nil {
		t.Errorf("the moved job's placement shows %+v, want Placed on cluster-b by a-then-b with its decision", p.Status)
	}
	if owners := p.OwnerReferences; len(owners) != 1 || owners[0].Name != moved || owners[0].Kind != "PyTorchJob" {
		t.Errorf("the moved job's placement is owned by %+v, want the job", owners)
	}
	q := placementOf(t, e, ns, greedy)
	if q.Status.Verdict != "Unschedulable" || len(q.Status.Reasons) != 2 {
		t.Errorf("the greedy job's placement shows %+v, want Unschedulable with a reason per cluster", q.Status)
	}

	// Deleting the job deletes its placement, though this control plane runs no garbage collector.
	job := e2eenv.Get(t, e.ControlPlane, scenarios.PyTorchJobKind, ns, greedy)
	gvr, _, err := e.ControlPlane.ResourceFor(job)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ControlPlane.Dynamic.Resource(gvr).Namespace(ns).Delete(ctx, greedy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the deleted job's WorkloadPlacement gone", func() bool {
		return e2eenv.Get(t, e.ControlPlane, placementKind, ns, v1alpha1.WorkloadPlacementName(greedy, "PyTorchJob")) == nil
	})
}

// waitEvents waits until the Events of the PyTorchJob ns/name begin with reasons want, in that order, and
// returns them.
func waitEvents(t *testing.T, e *e2eenv.Env, ns, name string, want []string) []eventsv1.Event {
	t.Helper()
	job := e2eenv.Get(t, e.ControlPlane, scenarios.PyTorchJobKind, ns, name)
	if job == nil {
		t.Fatalf("no PyTorchJob %s/%s", ns, name)
	}
	var events []eventsv1.Event
	var got []string
	defer func() {
		if t.Failed() {
			t.Logf("Events of %s/%s: %s", ns, name, describeEvents(events))
		}
	}()
	e2eenv.Eventually(t, e2eenv.Settle, fmt.Sprintf("Events %v on %s/%s", want, ns, name), func() bool {
		events = e2eenv.EventsAbout(t, e.ControlPlane, ns, job.GetUID())
		got = got[:0]
		for _, ev := range events {
			got = append(got, ev.Reason)
		}
		return len(got) >= len(want) && strings.Join(got[:len(want)], ",") == strings.Join(want, ",")
	})
	return events
}

func describeEvents(events []eventsv1.Event) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, "\n  %s %s %s: %s", ev.EventTime.Format(time.RFC3339Nano), ev.Type, ev.Reason, ev.Note)
	}
	return b.String()
}

func hasReason(events []eventsv1.Event, reason string) bool {
	for _, ev := range events {
		if ev.Reason == reason {
			return true
		}
	}
	return false
}

// placementsMismatch says which PyTorchJob on the control plane has no WorkloadPlacement that shows its
// verdict and clusters as its annotations do; "" when every one has.
func placementsMismatch(t *testing.T, e *e2eenv.Env) string {
	t.Helper()
	jobs := e2eenv.List(t, e.ControlPlane, scenarios.PyTorchJobKind)
	placements := map[string]v1alpha1.WorkloadPlacement{}
	for _, obj := range e2eenv.List(t, e.ControlPlane, placementKind) {
		var p v1alpha1.WorkloadPlacement
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
			t.Fatal(err)
		}
		placements[p.Namespace+"/"+p.Name] = p
	}
	if len(jobs) == 0 {
		return "no PyTorchJob on the control plane"
	}
	for _, job := range jobs {
		a := job.GetAnnotations()
		key := job.GetNamespace() + "/" + v1alpha1.WorkloadPlacementName(job.GetName(), job.GetKind())
		p, ok := placements[key]
		switch {
		case !ok:
			return "no WorkloadPlacement " + key
		case p.Status.Verdict != a[schemas.AnnotationPlacement] || p.Status.ClusterNames != a[schemas.AnnotationCluster] ||
			p.Status.Workload.UID != string(job.GetUID()):
			return fmt.Sprintf("WorkloadPlacement %s shows %s on %q of uid %s, the job %s on %q of uid %s", key,
				p.Status.Verdict, p.Status.ClusterNames, p.Status.Workload.UID, a[schemas.AnnotationPlacement],
				a[schemas.AnnotationCluster], job.GetUID())
		}
	}
	return ""
}

func placementOf(t *testing.T, e *e2eenv.Env, ns, name string) v1alpha1.WorkloadPlacement {
	t.Helper()
	obj := e2eenv.Get(t, e.ControlPlane, placementKind, ns, v1alpha1.WorkloadPlacementName(name, "PyTorchJob"))
	if obj == nil {
		t.Fatalf("no WorkloadPlacement of %s/%s", ns, name)
	}
	var p v1alpha1.WorkloadPlacement
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	clusterKind   = v1alpha1.SchemeGroupVersion.WithKind("Cluster")
	placementKind = v1alpha1.SchemeGroupVersion.WithKind("WorkloadPlacement")
)
