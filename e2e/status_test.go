package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestStatusFlowsBackToTheControlPlane plays the workload cluster's part: once the job is placed, a
// WorkloadStatus (as the cluster producer publishes it) with a Running condition lands on the
// control-plane object's status subresource, with annotations naming the cluster and the phase mapped
// through the built-in PyTorchJob RI; a status handled again after a newer one (a retried delivery) is not
// copied back over it, and a status from another cluster does not change where the verdict says the job
// runs. A verdict of Unschedulable puts the reasons in an annotation, and a verdict older than the one shown
// leaves the annotations alone.
func TestStatusFlowsBackToTheControlPlane(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace("team-status")
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	source := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName())
	ref := schemas.RefOf(source.Object)
	e2eenv.Eventually(t, e2eenv.Settle, "the job placed", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-status", job.GetName()) != nil
	})
	// The cluster producer reports the new copy (with no status yet) on its own time: the statuses this test
	// publishes must come after that report, or it would replace them.
	events, err := e.Bus.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the cluster producer's report of the copy", func() bool {
		_, err := events.GetLastMsgForSubject(ctx, schemas.WorkloadStatusSubject("cluster-a", ref))
		return err == nil
	})

	status := map[string]any{"conditions": []any{
		map[string]any{"type": "Created", "status": "True"},
		map[string]any{"type": "Running", "status": "True", "message": "all replicas running"},
	}}
	running := publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "status-1",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: status})
	e2eenv.Eventually(t, e2eenv.Settle, "status and annotations on the control plane", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName())
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		a := obj.GetAnnotations()
		return len(conditions) == 2 && a[schemas.AnnotationCluster] == "cluster-a" && a[schemas.AnnotationPhase] == "Running"
	})

	// The job succeeds; then the Running status arrives again, as a retried delivery would after its first
	// write failed. It is superseded, so the control plane keeps showing the job succeeded.
	succeeded := map[string]any{"conditions": []any{
		map[string]any{"type": "Created", "status": "True"},
		map[string]any{"type": "Running", "status": "False"},
		map[string]any{"type": "Succeeded", "status": "True", "message": "job finished"},
	}}
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "status-2",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: succeeded})
	showsSucceeded := func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName())
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		return len(conditions) == 3 && obj.GetAnnotations()[schemas.AnnotationPhase] == "Completed"
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the succeeded status on the control plane", showsSucceeded)
	writer, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	running.Attempt = 2
	if err := writer.Handle(ctx, running); err != nil {
		t.Fatalf("retried status: %v", err)
	}
	if !showsSucceeded() {
		t.Error("a retried, superseded status replaced the newer one on the control plane")
	}
	// The verdict says where the job is placed; a status from another cluster (a copy a move is leaving)
	// does not name that cluster instead.
	e2eenv.Eventually(t, e2eenv.Settle, "the Placed verdict shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced)
	})
	elsewhere := &schemas.WorkloadStatus{Cluster: "cluster-b", Workload: ref, Status: succeeded}
	if err := writer.Handle(ctx, deliveryOf(t, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-b", ref),
		"status-b", elsewhere, running.StreamSequence+1000)); err != nil {
		t.Fatalf("status from cluster-b: %v", err)
	}
	if got := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()[schemas.AnnotationCluster]; got != "cluster-a" {
		t.Errorf("after a status from cluster-b the job is annotated as running on %q, want cluster-a as its verdict says", got)
	}

	e.Publish(t, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "verdict-1", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 99, Status: schemas.VerdictUnschedulable, Policy: "gpu-first",
		Reasons: map[string]string{"cluster-b": "pod worker (nvidia.com/gpu 8) fits no node", "cluster-a": "not Ready"},
	})
	e2eenv.Eventually(t, e2eenv.Settle, "unschedulable reasons annotated", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()
		return a[schemas.AnnotationPlacement] == "Unschedulable" && a[schemas.AnnotationPolicy] == "gpu-first" &&
			a[schemas.AnnotationReasons] == "cluster-a: not Ready\ncluster-b: pod worker (nvidia.com/gpu 8) fits no node"
	})

	// A verdict older than the one shown (a retried delivery) leaves the annotations alone; the status writer
	// handles events in order, so once the failure published after it is shown, the older verdict was handled.
	e.Publish(t, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "verdict-2", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 100, Epoch: "test-epoch", Status: schemas.VerdictNoPolicy,
	})
	e2eenv.Eventually(t, e2eenv.Settle, "the newer verdict shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()
		return a[schemas.AnnotationPlacement] == "NoPolicy" && a[schemas.AnnotationVerdictSequence] == "test-epoch/100"
	})
	e.Publish(t, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "verdict-3", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 98, Epoch: "test-epoch", Status: schemas.VerdictPlaced, Clusters: []string{"cluster-b"},
	})
	e.Publish(t, schemas.TypePlacementFailed, schemas.PlacementSubject("cluster-a", ref), "failed-1", &schemas.PlacementFailed{
		DecisionID: "d-1", Workload: ref, Cluster: "cluster-a", Action: schemas.ActionApply, Sequence: 1, Error: "boom",
	})
	e2eenv.Eventually(t, e2eenv.Settle, "the failure published after the older verdict shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()
		return a[schemas.AnnotationPlacementError] != ""
	})
	a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-status", job.GetName()).GetAnnotations()
	if a[schemas.AnnotationPlacement] != "NoPolicy" || a[schemas.AnnotationVerdictSequence] != "test-epoch/100" {
		t.Errorf("an older verdict replaced the newer one: placement %q, verdict sequence %q",
			a[schemas.AnnotationPlacement], a[schemas.AnnotationVerdictSequence])
	}

	// Bookkeeping annotations never travel to the workload cluster.
	placed := e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-status", job.GetName())
	if _, copied := placed.GetAnnotations()[schemas.AnnotationReasons]; copied {
		t.Error("control-plane bookkeeping annotation copied to the workload cluster")
	}
}

// TestClusterAndPolicyStatus: `kubectl get clusters` shows each cluster Ready and Joined with its heartbeat, the
// summed allocatable of its nodes and its installed APIs; a SchedulePolicy that fleetflow cannot use
// says why, with the field path, in its Accepted condition.
func TestClusterAndPolicyStatus(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	clusterKind := schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "Cluster"}
	// cluster-a in testdata/fleet.yaml: 2 GPU nodes of 32 cpu and one CPU node of 16 cpu = 80 cpu.
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a status", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, clusterKind, "", "cluster-a")
		var c v1alpha1.Cluster
		if runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &c) != nil {
			return false
		}
		cpu := c.Status.Allocatable[corev1.ResourceCPU]
		ready, joined := false, false
		for _, cond := range c.Status.Conditions {
			ready = ready || (cond.Type == v1alpha1.ClusterConditionReady && cond.Status == metav1.ConditionTrue)
			joined = joined || (cond.Type == v1alpha1.ClusterConditionJoined && cond.Status == metav1.ConditionTrue)
		}
		return ready && joined && c.Status.LastHeartbeatTime != nil && cpu.Cmp(resource.MustParse("80")) == 0 &&
			slices.Contains(c.Status.InstalledAPIs, "kubeflow.org/v1/PyTorchJob")
	})

	split := func(key string, percentages ...int64) *unstructured.Unstructured {
		var entries []any
		for i, p := range percentages {
			entries = append(entries, map[string]any{"topologyValue": fmt.Sprintf("zone-%d", i), "percentage": p})
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
			"metadata": map[string]any{"name": "bad-split"},
			"spec": map[string]any{
				"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "apps", "kind": "Deployment"}}},
				"spreadConstraints": map[string]any{"spreadMode": "Divide", "topologyKey": key, "percentageSplit": entries},
			},
		}}
	}
	// What the CRD's rules can tell is refused by the apiserver, naming the field, as kubectl apply shows it.
	err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, split("region", 60, 30))
	if err == nil || !strings.Contains(err.Error(), "spec.spreadConstraints.percentageSplit") ||
		!strings.Contains(err.Error(), "percentages must sum to 100") {
		t.Fatalf("a split of 90%% applied: %v, want the apiserver to refuse it naming the field", err)
	}
	// What only the placer can tell (a topology key that is no label name) is Accepted=False, with the field.
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, split("no/valid/key!", 60, 40)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1",
			Resource: "schedulepolicies"}).Delete(context.Background(), "bad-split", metav1.DeleteOptions{})
	})
	policyKind := schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "SchedulePolicy"}
	e2eenv.Eventually(t, e2eenv.Settle, "the bad policy rejected with the field path", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, policyKind, "", "bad-split")
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			cond, _ := c.(map[string]any)
			msg, _ := cond["message"].(string)
			if cond["type"] == "Accepted" && cond["status"] == "False" && strings.Contains(msg, "spec.spreadConstraints.topologyKey") &&
				strings.HasSuffix(msg, "the last version accepted, if any, stays in force") {
				return true
			}
		}
		return false
	})
	// and told as a Warning Event on the policy, as kubectl describe shows it.
	badSplit := e2eenv.Get(t, e.ControlPlane, policyKind, "", "bad-split")
	e2eenv.Eventually(t, e2eenv.Settle, "a Rejected Event on the bad policy naming the field", func() bool {
		for _, ev := range e2eenv.EventsAbout(t, e.ControlPlane, metav1.NamespaceDefault, badSplit.GetUID()) {
			if ev.Reason == "Rejected" && ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Note, "spec.spreadConstraints.topologyKey") {
				return true
			}
		}
		return false
	})

	// A label value of 40,000 characters makes a message longer than a condition takes: it is cut, not lost.
	keys := map[string]any{"team": strings.Repeat("x", 40000)}
	verbose := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy", "metadata": map[string]any{"name": "bad-keys"},
		"spec": map[string]any{"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "apps", "kind": "Deployment"}},
			"labelSelectors": []any{map[string]any{"matchLabels": keys}}}}}}
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, verbose); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1",
			Resource: "schedulepolicies"}).Delete(context.Background(), "bad-keys", metav1.DeleteOptions{})
	})
	e2eenv.Eventually(t, e2eenv.Settle, "the policy with a huge label value rejected, its message cut", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, policyKind, "", "bad-keys")
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conditions {
			cond, _ := c.(map[string]any)
			msg, _ := cond["message"].(string)
			if cond["type"] == "Accepted" && cond["status"] == "False" && strings.HasSuffix(msg, "more bytes)") {
				return true
			}
		}
		return false
	})
}

// publishDelivery publishes an event and returns it as the status writer's consumer would deliver it.
func publishDelivery(t *testing.T, e *e2eenv.Env, eventType, subject, id string, payload schemas.Payload) bus.Delivery {
	t.Helper()
	d := deliveryOf(t, eventType, subject, id, payload, 0)
	ack, err := e.Bus.Publisher.Publish(t.Context(), subject, d.Event)
	if err != nil {
		t.Fatal(err)
	}
	d.StreamSequence = ack.Sequence
	return d
}

// deliveryOf is an event as a consumer would deliver it from stream sequence seq.
func deliveryOf(t *testing.T, eventType, subject, id string, payload schemas.Payload, seq uint64) bus.Delivery {
	t.Helper()
	event, err := codec.NewEvent(eventType, "/e2e", subject, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Event: event, Payload: payload, Subject: subject, StreamSequence: seq, Attempt: 1}
}
