package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// placedJob submits the test job in namespace, waits until the control plane shows it placed on cluster-a,
// and returns its reference and the epoch and sequence of the verdict shown.
func placedJob(t *testing.T, e *e2eenv.Env, namespace string) (schemas.ObjectRef, string, uint64) {
	t.Helper()
	placed := placeJob(t, e, namespace)
	var shown string
	e2eenv.Eventually(t, e2eenv.Settle, "the Placed verdict shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, namespace, placed.GetName()).GetAnnotations()
		shown = a[schemas.AnnotationVerdictSequence]
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced) && a[schemas.AnnotationCluster] == "cluster-a"
	})
	epoch, seq, _ := strings.Cut(shown, "/")
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		t.Fatalf("verdict sequence %q: %v", shown, err)
	}
	ref := schemas.RefOf(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, namespace, placed.GetName()).Object)
	// The cluster producer reports the new copy (with no status yet) on its own time: the statuses a test
	// publishes for the copy must come after that report, or it would replace them.
	events, err := e.Bus.JetStream.Stream(t.Context(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the cluster producer's report of the copy", func() bool {
		_, err := events.GetLastMsgForSubject(t.Context(), schemas.WorkloadStatusSubject("cluster-a", ref))
		return err == nil
	})
	return ref, epoch, n
}

func workerStatus(counts map[string]any, condition string) map[string]any {
	return map[string]any{"replicaStatuses": map[string]any{"Worker": counts},
		"conditions": []any{map[string]any{"type": condition, "status": "True"}}}
}

// TestStatusShownIsTheClustersWhole: the status copied onto the control plane is the workload cluster's whole
// status: a field the framework's controller dropped (a Job's active count, once it finished) goes too.
func TestStatusShownIsTheClustersWhole(t *testing.T) {
	e := newEnv(t)
	ref, _, _ := placedJob(t, e, "team-whole")
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "whole-1",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: workerStatus(map[string]any{"active": int64(2)}, "Running")})
	e2eenv.Eventually(t, e2eenv.Settle, "the running status shown", func() bool {
		active, _, _ := unstructured.NestedInt64(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-whole", ref.Name).Object,
			"status", "replicaStatuses", "Worker", "active")
		return active == 2
	})
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "whole-2",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: workerStatus(map[string]any{"succeeded": int64(2)}, "Succeeded")})
	e2eenv.Eventually(t, e2eenv.Settle, "the finished status shown whole", func() bool {
		worker, _, _ := unstructured.NestedMap(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-whole", ref.Name).Object,
			"status", "replicaStatuses", "Worker")
		_, active := worker["active"]
		return worker["succeeded"] != nil && !active
	})
	// A copy with no status yet (created again, as after a move) shows none, not the old one.
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "whole-3",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref})
	e2eenv.Eventually(t, e2eenv.Settle, "no status shown for a copy without one", func() bool {
		shown := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-whole", ref.Name)
		status, _, _ := unstructured.NestedMap(shown.Object, "status")
		return len(status) == 0 && shown.GetAnnotations()[schemas.AnnotationPhase] == "Undefined"
	})
}

// TestStatusComesFromTheClustersTheVerdictShows: once the control plane shows the job placed on cluster-a, a
// status from cluster-b (a copy the job left, reporting again after its cluster came back) is not shown; when
// a verdict moves the job to cluster-b, the status cluster-b reported is shown with it, though it was handled
// before the verdict.
func TestStatusComesFromTheClustersTheVerdictShows(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ref, epoch, seq := placedJob(t, e, "team-shown")
	running := workerStatus(map[string]any{"active": int64(1)}, "Running")
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "shown-a",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: running})
	showsCondition := func(condition string) func() bool {
		return func() bool {
			conditions, _, _ := unstructured.NestedSlice(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-shown", ref.Name).Object,
				"status", "conditions")
			return len(conditions) == 1 && conditions[0].(map[string]any)["type"] == condition
		}
	}
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a's status shown", showsCondition("Running"))

	writer, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	failed := workerStatus(map[string]any{"failed": int64(1)}, "Failed")
	fromB := publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-b", ref), "shown-b",
		&schemas.WorkloadStatus{Cluster: "cluster-b", Workload: ref, Status: failed})
	if err := writer.Handle(ctx, fromB); err != nil {
		t.Fatal(err)
	}
	if !showsCondition("Running")() {
		t.Fatal("a status from cluster-b replaced cluster-a's while the job is shown placed on cluster-a")
	}

	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "shown-verdict", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "a-then-b", Clusters: []string{"cluster-b"}})
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-b's status shown with the verdict that moved the job there", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-shown", ref.Name).GetAnnotations()
		return a[schemas.AnnotationCluster] == "cluster-b" && a[schemas.AnnotationPhase] == "Failed" && showsCondition("Failed")()
	})
}

// TestPlacementErrorShownUntilItsClusterSucceeds: the placement error names the cluster whose applier gave up;
// a success on another cluster leaves it, one on that cluster clears it, and the failure handled again after
// that (a retried delivery) does not bring it back.
func TestPlacementErrorShownUntilItsClusterSucceeds(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ref, _, _ := placedJob(t, e, "team-error")
	writer, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	shownError := func() string {
		return e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-error", ref.Name).GetAnnotations()[schemas.AnnotationPlacementError]
	}
	failedA := publishDelivery(t, e, schemas.TypePlacementFailed, schemas.PlacementSubject("cluster-a", ref), "error-failed-a",
		&schemas.PlacementFailed{DecisionID: "d-a", Workload: ref, Cluster: "cluster-a", Action: schemas.ActionApply, Sequence: 1,
			Error: "quota exceeded", Attempts: 8})
	if err := writer.Handle(ctx, failedA); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shownError(), "on cluster-a: quota exceeded") {
		t.Fatalf("placement error = %q, want cluster-a's", shownError())
	}
	appliedB := publishDelivery(t, e, schemas.TypePlacementApplied, schemas.PlacementSubject("cluster-b", ref), "error-applied-b",
		&schemas.PlacementApplied{DecisionID: "d-b", Workload: ref, Cluster: "cluster-b", Action: schemas.ActionApply, Sequence: 2})
	if err := writer.Handle(ctx, appliedB); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shownError(), "on cluster-a: ") {
		t.Fatalf("placement error = %q after cluster-b applied, want cluster-a's still", shownError())
	}
	appliedA := publishDelivery(t, e, schemas.TypePlacementApplied, schemas.PlacementSubject("cluster-a", ref), "error-applied-a",
		&schemas.PlacementApplied{DecisionID: "d-a2", Workload: ref, Cluster: "cluster-a", Action: schemas.ActionApply, Sequence: 3})
	if err := writer.Handle(ctx, appliedA); err != nil {
		t.Fatal(err)
	}
	failedA.Attempt = 2
	if err := writer.Handle(ctx, failedA); err != nil {
		t.Fatal(err)
	}
	if got := shownError(); got != "" {
		t.Errorf("placement error = %q, want none once cluster-a applied, even with its older failure handled again", got)
	}
}

// TestPolicyVerdictOfAnOlderGenerationIsNotShown: the Accepted condition of a SchedulePolicy is written only
// from an event of its current generation: one of an older generation, handled again after the newer one
// (a retried delivery), would undo the newer verdict, and nothing would correct it.
func TestPolicyVerdictOfAnOlderGenerationIsNotShown(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	policyKind := schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "SchedulePolicy"}
	policy := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "SchedulePolicy",
		"metadata": map[string]any{"name": "generations"},
		"spec":     map[string]any{"resourceSelectors": map[string]any{"kinds": []any{map[string]any{"group": "apps", "kind": "Deployment"}}}}}}
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, policy); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1",
			Resource: "schedulepolicies"}).Delete(context.Background(), "generations", metav1.DeleteOptions{})
	})
	first := e2eenv.Get(t, e.ControlPlane, policyKind, "", "generations")
	if err := unstructured.SetNestedField(policy.Object, int64(5), "spec", "priority"); err != nil {
		t.Fatal(err)
	}
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, policy); err != nil {
		t.Fatal(err)
	}
	accepted := func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, policyKind, "", "generations")
		observed, _, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		return obj.GetGeneration() == 2 && observed == 2 && len(conditions) == 1 && conditions[0].(map[string]any)["status"] == "True"
	}
	e2eenv.Eventually(t, e2eenv.Settle, "generation 2 accepted", accepted)

	// Generation 1, as its event carried it, but invalid: were its verdict written, the policy would show
	// rejected.
	older := first.DeepCopy()
	if err := unstructured.SetNestedField(older.Object, "Divide", "spec", "spreadConstraints", "spreadMode"); err != nil {
		t.Fatal(err)
	}
	writer, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	changed := &schemas.ObjectChanged{Object: older.Object}
	if err := writer.Handle(ctx, deliveryOf(t, schemas.TypePolicyChanged, schemas.PolicySubject(changed.Ref()), "generations-1", changed, 1)); err != nil {
		t.Fatal(err)
	}
	if !accepted() {
		t.Error("the verdict on generation 1, handled after generation 2's, replaced it")
	}
}

// TestSpreadShowsEachClustersPhase: a job shown spread over two clusters shows each one's phase, the least
// advanced of them as its phase, and the status of the copy that is least advanced (the first cluster among
// equals), which a later status of a copy further along does not replace; a verdict that places it on one
// cluster again drops the per-cluster phases. The spread names cluster-b and a cluster-c the fleet does not
// have, whose statuses the test publishes, so that the copy the placer put on cluster-a reports nothing that
// counts.
func TestSpreadShowsEachClustersPhase(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := placedJob(t, e, "team-spread")
	shows := func(what string, phase, clusterPhases, condition string) {
		t.Helper()
		e2eenv.Eventually(t, e2eenv.Settle, what, func() bool {
			obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-spread", ref.Name)
			a := obj.GetAnnotations()
			conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			return a[schemas.AnnotationPhase] == phase && a[schemas.AnnotationClusterPhases] == clusterPhases &&
				len(conditions) == 1 && conditions[0].(map[string]any)["type"] == condition
		})
	}
	status := func(cluster, id string, condition string) {
		publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(cluster, ref), id,
			&schemas.WorkloadStatus{Cluster: cluster, Workload: ref, Status: workerStatus(map[string]any{"active": int64(1)}, condition)})
	}
	verdict := func(id string, after uint64, clusters ...string) {
		publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), id, &schemas.PlacementVerdict{
			Workload: ref, Sequence: seq + after, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "a-then-b", Clusters: clusters})
	}

	verdict("spread-verdict", 1000, "cluster-b", "cluster-c")
	status("cluster-c", "spread-c-running", "Running")
	shows("cluster-c's status, and cluster-b not reported yet", "Undefined", "cluster-b=Undefined,cluster-c=Running", "Running")

	status("cluster-b", "spread-b-failed", "Failed")
	shows("cluster-b's status, and its failure as the job's phase", "Failed", "cluster-b=Failed,cluster-c=Running", "Failed")

	status("cluster-c", "spread-c-done", "Succeeded")
	shows("cluster-b's status still, with cluster-c's new phase", "Failed", "cluster-b=Failed,cluster-c=Completed", "Failed")

	status("cluster-b", "spread-b-restarted", "Running")
	shows("cluster-b's status, the least advanced", "Running", "cluster-b=Running,cluster-c=Completed", "Running")

	status("cluster-c", "spread-c-failed", "Failed")
	shows("cluster-c's status, now the least advanced, though cluster-b comes first", "Failed",
		"cluster-b=Running,cluster-c=Failed", "Failed")

	verdict("single-verdict", 2000, "cluster-c")
	shows("cluster-c's status alone once the job is placed there only", "Failed", "", "Failed")
	if a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-spread", ref.Name).GetAnnotations(); a[schemas.AnnotationCluster] != "cluster-c" {
		t.Errorf("%s = %q, want cluster-c", schemas.AnnotationCluster, a[schemas.AnnotationCluster])
	}
}

// TestStatusInAVersionTheControlPlaneDoesNotServe: a workload cluster whose CRD is newer reports the copy's
// status in a version the control plane does not serve; the status is still shown, on the control-plane object
// in the version the control plane serves.
func TestStatusInAVersionTheControlPlaneDoesNotServe(t *testing.T) {
	e := newEnv(t)
	ref, _, _ := placedJob(t, e, "team-newer")
	newer := ref
	newer.APIVersion = "kubeflow.org/v9"
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", newer), "newer-1",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: newer, Status: workerStatus(map[string]any{"active": int64(3)}, "Running")})
	e2eenv.Eventually(t, e2eenv.Settle, "the status reported in kubeflow.org/v9 shown", func() bool {
		active, _, _ := unstructured.NestedInt64(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-newer", ref.Name).Object,
			"status", "replicaStatuses", "Worker", "active")
		return active == 3
	})
}

// TestDivideShareJudgesEachClustersPhase: a workload a Divide spread splits shows each cluster's share of its
// replicas, and each copy's status is judged against that share, as the copy has it: a cluster running all 6
// of its 6 replicas is Running, though the whole Deployment asks for 10.
func TestDivideShareJudgesEachClustersPhase(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := shownDeployment(t, e, "team-share")
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "divided", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide",
		Clusters: []string{"cluster-a", "cluster-b"}, Replicas: map[string]int32{"cluster-a": 6, "cluster-b": 4}})
	publishShareStatuses(t, e, ref, "share-")
	var a map[string]string
	e2eenv.Eventually(t, e2eenv.Settle, "each cluster's phase judged against its share", func() bool {
		a = e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationClusterPhases] == "cluster-a=Running,cluster-b=Initializing"
	})
	if got := a[schemas.AnnotationClusterReplicas]; got != "cluster-a=6,cluster-b=4" {
		t.Errorf("%s = %q, want cluster-a=6,cluster-b=4", schemas.AnnotationClusterReplicas, got)
	}
	// New shares over the same clusters judge the statuses already reported anew: cluster-b's 2 ready replicas
	// are all of its new share of 2.
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "divided-again", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 2000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide",
		Clusters: []string{"cluster-a", "cluster-b"}, Replicas: map[string]int32{"cluster-a": 8, "cluster-b": 2}})
	e2eenv.Eventually(t, e2eenv.Settle, "each cluster's phase judged against its new share", func() bool {
		a = e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationClusterReplicas] == "cluster-a=8,cluster-b=2" &&
			a[schemas.AnnotationClusterPhases] == "cluster-a=Initializing,cluster-b=Running"
	})
}

// TestStatusTheControlPlaneRefusesLeavesTheVerdictShown: a status the control plane's schema refuses (here one
// breaking a Deployment's rule, readyReplicas above replicas) is not copied, but the verdict that shows the
// workload placed, and its phase, still are.
func TestStatusTheControlPlaneRefusesLeavesTheVerdictShown(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := shownDeployment(t, e, "team-refused")
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "refused-status",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: map[string]any{"replicas": int64(1), "readyReplicas": int64(3)}})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "placed-on-a", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "pin", Clusters: []string{"cluster-a"}})
	e2eenv.Eventually(t, e2eenv.Settle, "the verdict shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced) && a[schemas.AnnotationCluster] == "cluster-a" &&
			a[schemas.AnnotationPhase] != ""
	})
	if status, _, _ := unstructured.NestedMap(e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).Object, "status"); len(status) != 0 {
		t.Errorf("the refused status was shown: %v", status)
	}
}

var deploymentKind = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

// shownDeployment submits a Deployment of 10 replicas, which a policy of its own sends to no cluster, and returns
// it once its Unschedulable verdict is shown, with that verdict's epoch and sequence for a test's own verdicts
// to follow.
func shownDeployment(t *testing.T, e *e2eenv.Env, ns string) (schemas.ObjectRef, string, uint64) {
	t.Helper()
	if err := e.ControlPlane.EnsureNamespace(t.Context(), ns, e2eenv.FieldManager, nil); err != nil {
		t.Fatal(err)
	}
	applyPolicy(t, e, ns+"-nowhere", map[string]any{"resourceSelectors": map[string]any{
		"kinds":          []any{map[string]any{"group": "apps", "kind": "Deployment"}},
		"labelSelectors": []any{map[string]any{"matchLabels": map[string]any{"e2e-policy": ns + "-nowhere"}}}},
		"clusterSelector": map[string]any{"matchLabels": map[string]any{"e2e-no-such-label": "x"}}})
	deployment := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": ns, "labels": map[string]any{"e2e-policy": ns + "-nowhere"}},
		"spec": map[string]any{"replicas": int64(10), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "example.com/web:1"}}}}}}}
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, deployment); err != nil {
		t.Fatal(err)
	}
	var shown string
	e2eenv.Eventually(t, e2eenv.Settle, "the placer's verdict on the Deployment shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, deploymentKind, ns, "web").GetAnnotations()
		shown = a[schemas.AnnotationVerdictSequence]
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable)
	})
	epoch, seqText, _ := strings.Cut(shown, "/")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		t.Fatalf("verdict sequence %q: %v", shown, err)
	}
	return schemas.RefOf(e2eenv.Get(t, e.ControlPlane, deploymentKind, ns, "web").Object), epoch, seq
}

// TestUnschedulableWorkloadStopsShowingACopyThatWent: a workload that turned Unschedulable keeps showing the
// cluster its copy still runs on, with that copy's phase and status, until the copy is deleted there (its
// Cluster left the fleet, say); then none of them is shown any more.
func TestUnschedulableWorkloadStopsShowingACopyThatWent(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := placedJob(t, e, "team-went")
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "went-running",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: workerStatus(map[string]any{"active": int64(1)}, "Running")})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "went-unschedulable", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictUnschedulable, Policy: "a-then-b",
		Reasons: map[string]string{"cluster-b": "does not fit"}})
	e2eenv.Eventually(t, e2eenv.Settle, "Unschedulable, still shown on cluster-a where it runs", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable) && a[schemas.AnnotationCluster] == "cluster-a" &&
			a[schemas.AnnotationPhase] == "Running"
	})
	publishDelivery(t, e, schemas.TypePlacementApplied, schemas.PlacementSubject("cluster-a", ref), "went-deleted", &schemas.PlacementApplied{
		DecisionID: "went/Delete/cluster-a", Workload: ref, Cluster: "cluster-a", Action: schemas.ActionDelete, Sequence: seq + 1001})
	e2eenv.Eventually(t, e2eenv.Settle, "no cluster, phase or status shown once the copy went", func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ref.Namespace, ref.Name)
		a := obj.GetAnnotations()
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		_, hasCluster := a[schemas.AnnotationCluster]
		_, hasPhase := a[schemas.AnnotationPhase]
		return !hasCluster && !hasPhase && len(status) == 0 && a[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable)
	})
}

// TestObjectNoPolicySelectsIsLeftAlone: an object of a workload kind that no policy selects, and never did (a
// Deployment of the control plane's own), gets no fleetflow annotation; its NoPolicy verdict is in the
// streams for the audit.
func TestObjectNoPolicySelectsIsLeftAlone(t *testing.T) {
	e := newEnv(t)
	ref, _, _ := placedJob(t, e, "team-bystander")
	bystander := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "team-bystander"}, "data": map[string]any{"k": "v"}}}
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, bystander); err != nil {
		t.Fatal(err)
	}
	// A Duplicate policy for some ConfigMaps makes the placer watch and judge them all.
	applyPolicy(t, e, "bystander-configmaps", map[string]any{"resourceSelectors": map[string]any{
		"kinds":          []any{map[string]any{"kind": "ConfigMap"}},
		"labelSelectors": []any{map[string]any{"matchLabels": map[string]any{"share": "yes"}}}},
		"spreadConstraints": map[string]any{"spreadMode": "Duplicate"}})
	configMapKind := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	bystanderRef := schemas.RefOf(e2eenv.Get(t, e.ControlPlane, configMapKind, "team-bystander", "settings").Object)
	events, err := e.Bus.JetStream.Stream(t.Context(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the placer's NoPolicy verdict on the ConfigMap", func() bool {
		_, err := events.GetLastMsgForSubject(t.Context(), schemas.VerdictSubject(bystanderRef))
		return err == nil
	})
	// The status writer handles the events stream in order: once a report published after the verdict is
	// shown, the verdict was handled.
	publishDelivery(t, e, schemas.TypePlacementFailed, schemas.PlacementSubject("cluster-a", ref), "bystander-marker",
		&schemas.PlacementFailed{DecisionID: "marker", Workload: ref, Cluster: "cluster-a", Action: schemas.ActionApply, Sequence: 1, Error: "marker"})
	e2eenv.Eventually(t, e2eenv.Settle, "the report after the verdict shown", func() bool {
		return e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-bystander", ref.Name).GetAnnotations()[schemas.AnnotationPlacementError] != ""
	})
	for key := range e2eenv.Get(t, e.ControlPlane, configMapKind, "team-bystander", "settings").GetAnnotations() {
		if strings.HasPrefix(key, schemas.AnnotationPrefix) {
			t.Errorf("the ConfigMap no policy selects carries %s", key)
		}
	}
}

// TestDivideShareStatusBeforeVerdict: the statuses of a Divide's copies handled before the verdict that places
// them (verdicts ride the Apply on the decisions stream, statuses come on the events stream, to another
// consumer) are mapped, when the verdict is shown, against the shares that verdict shows.
func TestDivideShareStatusBeforeVerdict(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := shownDeployment(t, e, "team-share-first")
	publishShareStatuses(t, e, ref, "share-first-")
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "divided-after", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide",
		Clusters: []string{"cluster-a", "cluster-b"}, Replicas: map[string]int32{"cluster-a": 6, "cluster-b": 4}})
	var a map[string]string
	e2eenv.Eventually(t, e2eenv.Settle, "the divided verdict shown with cluster phases", func() bool {
		a = e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationClusterReplicas] != "" && a[schemas.AnnotationClusterPhases] != ""
	})
	if got := a[schemas.AnnotationClusterPhases]; got != "cluster-a=Running,cluster-b=Initializing" {
		t.Errorf("%s = %q, want cluster-a=Running,cluster-b=Initializing (cluster-a runs 6 of its share of 6)",
			schemas.AnnotationClusterPhases, got)
	}
}

// TestNoPolicyVerdictNotShownStillOutranksAnOlderOne: a NoPolicy verdict not shown (the object never showed one)
// still keeps an older verdict handled after it (a Placed one riding an Apply, read by the writer's other
// consumer) from being shown.
func TestNoPolicyVerdictNotShownStillOutranksAnOlderOne(t *testing.T) {
	e := newEnv(t)
	const ns = "team-order"
	job, _, _ := placedJob(t, e, ns)
	late := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "late", "namespace": ns}, "data": map[string]any{"k": "v"}}}
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, late); err != nil {
		t.Fatal(err)
	}
	configMapKind := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ref := schemas.RefOf(e2eenv.Get(t, e.ControlPlane, configMapKind, ns, "late").Object)
	// The newest verdict first (NoPolicy, sequence 2000), then the older Placed one (sequence 1000).
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "order-nopolicy", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 2000, Epoch: "order-epoch", Status: schemas.VerdictNoPolicy})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "order-placed", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 1000, Epoch: "order-epoch", Status: schemas.VerdictPlaced, Policy: "p", Clusters: []string{"cluster-a"}})
	// The status writer handles the events stream in order: once a report published after both is shown,
	// both were handled.
	publishDelivery(t, e, schemas.TypePlacementFailed, schemas.PlacementSubject("cluster-a", job), "order-marker",
		&schemas.PlacementFailed{DecisionID: "marker", Workload: job, Cluster: "cluster-a", Action: schemas.ActionApply, Sequence: 1, Error: "marker"})
	e2eenv.Eventually(t, e2eenv.Settle, "the report after both verdicts shown", func() bool {
		return e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ns, job.Name).GetAnnotations()[schemas.AnnotationPlacementError] != ""
	})
	if a := e2eenv.Get(t, e.ControlPlane, configMapKind, ns, "late").GetAnnotations(); a[schemas.AnnotationPlacement] != "" {
		t.Errorf("shown %s at %s, want nothing: the newest verdict, NoPolicy, is not shown", a[schemas.AnnotationPlacement],
			a[schemas.AnnotationVerdictSequence])
	}
}

// TestNoPolicyVerdictAnotherReplicaSkippedStillOutranksAnOlderOne: status writer replicas share the work, so
// the NoPolicy verdict not shown (the object never showed one) may have been handled by another replica; the
// older Placed verdict riding an Apply, handled after it by this one, must not be shown either.
func TestNoPolicyVerdictAnotherReplicaSkippedStillOutranksAnOlderOne(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const ns = "team-order-replicas"
	placedJob(t, e, ns)
	late := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "late", "namespace": ns}, "data": map[string]any{"k": "v"}}}
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, late); err != nil {
		t.Fatal(err)
	}
	configMapKind := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	ref := schemas.RefOf(e2eenv.Get(t, e.ControlPlane, configMapKind, ns, "late").Object)
	// The newest verdict, NoPolicy (sequence 2000), stored and left to the pipeline's writer, the other replica.
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "replicas-nopolicy", &schemas.PlacementVerdict{
		Workload: ref, Sequence: 2000, Epoch: "order-epoch", Status: schemas.VerdictNoPolicy})
	writer, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	placed := &schemas.PlacementVerdict{Workload: ref, Sequence: 1000, Epoch: "order-epoch", Status: schemas.VerdictPlaced,
		Policy: "p", Clusters: []string{"cluster-a"}}
	decided := &schemas.PlacementDecided{DecisionID: "replicas-apply", Workload: ref, Cluster: "cluster-a",
		Action: schemas.ActionApply, Sequence: 1000, Epoch: "order-epoch", Verdict: placed, Object: late.Object}
	if err := writer.Handle(ctx, deliveryOf(t, schemas.TypePlacementDecided, schemas.DecisionSubject("cluster-a", ref),
		"replicas-apply", decided, 1)); err != nil {
		t.Fatal(err)
	}
	if a := e2eenv.Get(t, e.ControlPlane, configMapKind, ns, "late").GetAnnotations(); a[schemas.AnnotationPlacement] != "" {
		t.Errorf("shown %s at %s, want nothing: the newest verdict, NoPolicy, is not shown", a[schemas.AnnotationPlacement],
			a[schemas.AnnotationVerdictSequence])
	}
}

// TestStatusSupersededWhileAReplicaWroteIsNotShown: status writer replicas share the work, so a newer status
// of a copy can be stored and shown by another replica while this one is about to show the older one, which it
// found the newest when it looked. It must not write the older status over the newer one.
func TestStatusSupersededWhileAReplicaWroteIsNotShown(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	const ns = "team-late-status"
	ref, _, _ := placedJob(t, e, ns)
	subject := schemas.WorkloadStatusSubject("cluster-a", ref)
	showsCondition := func(condition string) func() bool {
		return func() bool {
			conditions, _, _ := unstructured.NestedSlice(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ns, ref.Name).Object,
				"status", "conditions")
			return len(conditions) == 1 && conditions[0].(map[string]any)["type"] == condition
		}
	}
	older := publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "late-running",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: workerStatus(map[string]any{"active": int64(1)}, "Running")})
	e2eenv.Eventually(t, e2eenv.Settle, "the older status shown", showsCondition("Running"))

	replica, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	superseded, asked := replica.Superseded, false
	replica.Superseded = func(ctx context.Context, subject string, seq uint64) (bool, error) {
		if asked {
			return superseded(ctx, subject, seq)
		}
		asked = true
		// Nothing newer when asked; right after, the newer status is stored and the pipeline's writer, the other
		// replica, shows it.
		publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "late-failed",
			&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: workerStatus(map[string]any{"failed": int64(1)}, "Failed")})
		e2eenv.Eventually(t, e2eenv.Settle, "the newer status shown by the other replica", showsCondition("Failed"))
		return false, nil
	}
	if err := replica.Handle(ctx, older); err != nil {
		t.Fatal(err)
	}
	if !showsCondition("Failed")() {
		t.Error("the older status was written over the newer one")
	}
}

// deploymentStatus is the status of a Deployment's copy running replicas, ready of them.
// publishShareStatuses publishes the statuses of the copies of a Deployment divided 6/4: cluster-a's 6 of 6 ready,
// cluster-b's 2 of 4, with ids starting with prefix.
func publishShareStatuses(t *testing.T, e *e2eenv.Env, ref schemas.ObjectRef, prefix string) {
	t.Helper()
	for cluster, ready := range map[string][2]int64{"cluster-a": {6, 6}, "cluster-b": {4, 2}} {
		publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(cluster, ref), prefix+cluster,
			&schemas.WorkloadStatus{Cluster: cluster, Workload: ref, Status: deploymentStatus(ready[0], ready[1])})
	}
}

func deploymentStatus(replicas, ready int64) map[string]any {
	return map[string]any{"replicas": replicas, "readyReplicas": ready}
}

// showsNothingOfACopy says whether the Deployment ref shows the verdict it is given and no cluster, phase or
// status: what a workload no verdict places shows once none of its copies runs.
func showsNothingOfACopy(t *testing.T, e *e2eenv.Env, ref schemas.ObjectRef, verdict schemas.VerdictStatus) func() bool {
	return func() bool {
		obj := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name)
		a := obj.GetAnnotations()
		status, _, _ := unstructured.NestedMap(obj.Object, "status")
		_, hasCluster := a[schemas.AnnotationCluster]
		_, hasPhase := a[schemas.AnnotationPhase]
		return !hasCluster && !hasPhase && len(status) == 0 && a[schemas.AnnotationPlacement] == string(verdict)
	}
}

// TestUnschedulableWorkloadStopsShowingACopyReportedGone: a workload that turned Unschedulable keeps showing
// the cluster its copy runs on until the cluster reports the copy gone (deleted there, or its CRD removed),
// as it does once the applier deleted the copy; a Gone of another incarnation of the workload, or one a newer
// status of the cluster superseded (the copy came back), changes nothing.
func TestUnschedulableWorkloadStopsShowingACopyReportedGone(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ref, epoch, seq := shownDeployment(t, e, "team-gone")
	subject := schemas.WorkloadStatusSubject("cluster-a", ref)
	publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-running",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: deploymentStatus(10, 10)})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "gone-placed", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "pin", Clusters: []string{"cluster-a"}})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "gone-unschedulable", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 2000, Epoch: epoch, Status: schemas.VerdictUnschedulable, Policy: "pin",
		Message: "the copy on cluster-a keeps running"})
	shownOnA := func(phase string, ready int64) func() bool {
		return func() bool {
			obj := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name)
			a := obj.GetAnnotations()
			shownReady, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
			return a[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable) && a[schemas.AnnotationCluster] == "cluster-a" &&
				a[schemas.AnnotationPhase] == phase && shownReady == ready
		}
	}
	e2eenv.Eventually(t, e2eenv.Settle, "Unschedulable, still shown on cluster-a where it runs", shownOnA("Running", 10))

	writer, err := app.NewStatusWriter(ctx, e.Bus, e.ControlPlane, e.Log)
	if err != nil {
		t.Fatal(err)
	}
	otherIncarnation := ref
	otherIncarnation.UID = "uid-of-an-earlier-web"
	if err := writer.Handle(ctx, publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-other",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: otherIncarnation, Gone: true})); err != nil {
		t.Fatal(err)
	}
	// The pipeline's own writer shares the workload with this one: its writes settle on the same answer.
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a still shown after a Gone of another incarnation of the workload",
		shownOnA("Running", 10))
	// Reported gone, then back with a new status; the Gone handled again after that (a retried delivery).
	gone := publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-stale",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Gone: true})
	publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-back",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: deploymentStatus(10, 9)})
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a shown with the status its copy reported once back", shownOnA("Initializing", 9))
	if err := writer.Handle(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if !shownOnA("Initializing", 9)() {
		t.Fatal("a Gone superseded by a newer status of cluster-a stopped showing it")
	}

	publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-for-good",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: deploymentStatus(10, 9), Gone: true})
	e2eenv.Eventually(t, e2eenv.Settle, "no cluster, phase or status shown once cluster-a reported its copy gone",
		showsNothingOfACopy(t, e, ref, schemas.VerdictUnschedulable))
}

// unplacedSpread submits a Deployment of 10 replicas and shows it divided over cluster-a (5 replicas, 5 ready),
// cluster-b (3, 1 ready) and cluster-c (2, 2 ready), then Unschedulable, its copies left where they run; it
// returns the Deployment and the epoch and sequence of the Unschedulable verdict. The statuses are the test's:
// the placer has put no copy anywhere.
func unplacedSpread(t *testing.T, e *e2eenv.Env, ns string) (schemas.ObjectRef, string, uint64) {
	t.Helper()
	ref, epoch, seq := shownDeployment(t, e, ns)
	for cluster, ready := range map[string][2]int64{"cluster-a": {5, 5}, "cluster-b": {3, 1}, "cluster-c": {2, 2}} {
		publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(cluster, ref), ns+"-"+cluster,
			&schemas.WorkloadStatus{Cluster: cluster, Workload: ref, Status: deploymentStatus(ready[0], ready[1])})
	}
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), ns+"-divided", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide",
		Clusters: []string{"cluster-a", "cluster-b", "cluster-c"}, Replicas: map[string]int32{"cluster-a": 5, "cluster-b": 3, "cluster-c": 2}})
	e2eenv.Eventually(t, e2eenv.Settle, "the divided verdict shown with each cluster's phase", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationClusterPhases] == "cluster-a=Running,cluster-b=Initializing,cluster-c=Running"
	})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), ns+"-unschedulable", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 2000, Epoch: epoch, Status: schemas.VerdictUnschedulable, Policy: "divide",
		Message: "the copy on cluster-a, cluster-b, cluster-c keeps running"})
	e2eenv.Eventually(t, e2eenv.Settle, "the Unschedulable verdict shown", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictUnschedulable)
	})
	return ref, epoch, seq + 2000
}

// spreadShown is what a Deployment shows of a spread: its clusters, their shares and phases, its phase, and
// its status's ready replicas.
type spreadShown struct {
	clusters, replicas, clusterPhases, phase string
	ready                                    int64
}

func shownSpread(t *testing.T, e *e2eenv.Env, ref schemas.ObjectRef) spreadShown {
	obj := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name)
	a := obj.GetAnnotations()
	ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "readyReplicas")
	return spreadShown{clusters: a[schemas.AnnotationCluster], replicas: a[schemas.AnnotationClusterReplicas],
		clusterPhases: a[schemas.AnnotationClusterPhases], phase: a[schemas.AnnotationPhase], ready: ready}
}

// TestUnschedulableSpreadStaysShownOnAllItsClusters: a spread whose verdict turned Unschedulable keeps showing
// every cluster its copies run on, each one's phase and their status taken together, as while it was placed;
// a status from one of them does not show the workload on that cluster alone.
func TestUnschedulableSpreadStaysShownOnAllItsClusters(t *testing.T) {
	e := newEnv(t)
	ref, _, _ := unplacedSpread(t, e, "team-unplaced-spread")
	want := spreadShown{clusters: "cluster-a,cluster-b,cluster-c", replicas: "cluster-a=5,cluster-b=3,cluster-c=2",
		clusterPhases: "cluster-a=Running,cluster-b=Initializing,cluster-c=Running", phase: "Initializing", ready: 8}
	if got := shownSpread(t, e, ref); got != want {
		t.Errorf("Unschedulable spread shows %+v, want %+v", got, want)
	}
	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-b", ref), "unplaced-b-ready",
		&schemas.WorkloadStatus{Cluster: "cluster-b", Workload: ref, Status: deploymentStatus(3, 3)})
	want.clusterPhases, want.phase, want.ready = "cluster-a=Running,cluster-b=Running,cluster-c=Running", "Running", 10
	var got spreadShown
	e2eenv.Eventually(t, e2eenv.Settle, "every cluster shown with cluster-b's new status", func() bool {
		got = shownSpread(t, e, ref)
		return got.clusterPhases == want.clusterPhases || got.clusters != want.clusters
	})
	if got != want {
		t.Errorf("after cluster-b's status the spread shows %+v, want %+v", got, want)
	}
}

// TestUnschedulableSpreadForgetsEachCopyThatWent: once a copy of a spread no verdict places goes (deleted by
// the applier, or reported gone by its cluster), its cluster, share and phase are no longer shown, and the
// phase and status are taken anew from the copies left: of the last one alone, mapped against its share, once
// it is the only one.
func TestUnschedulableSpreadForgetsEachCopyThatWent(t *testing.T) {
	e := newEnv(t)
	ref, _, seq := unplacedSpread(t, e, "team-spread-went")
	shows := func(what string, want spreadShown) {
		t.Helper()
		var got spreadShown
		e2eenv.Eventually(t, e2eenv.Settle, what, func() bool {
			got = shownSpread(t, e, ref)
			return got == want
		})
	}
	publishDelivery(t, e, schemas.TypePlacementApplied, schemas.PlacementSubject("cluster-b", ref), "spread-went-b", &schemas.PlacementApplied{
		DecisionID: "spread-went/Delete/cluster-b", Workload: ref, Cluster: "cluster-b", Action: schemas.ActionDelete, Sequence: seq + 1})
	shows("cluster-b's copy deleted: the two others shown, Running", spreadShown{clusters: "cluster-a,cluster-c",
		replicas: "cluster-a=5,cluster-c=2", clusterPhases: "cluster-a=Running,cluster-c=Running", phase: "Running", ready: 7})

	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-a", ref), "spread-went-a",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: deploymentStatus(5, 5), Gone: true})
	shows("cluster-a's copy gone: cluster-c's alone, Running with its 2 of 2", spreadShown{clusters: "cluster-c",
		replicas: "cluster-c=2", phase: "Running", ready: 2})

	publishDelivery(t, e, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject("cluster-c", ref), "spread-went-c",
		&schemas.WorkloadStatus{Cluster: "cluster-c", Workload: ref, Status: deploymentStatus(2, 2), Gone: true})
	e2eenv.Eventually(t, e2eenv.Settle, "no cluster, phase or status shown once every copy went",
		showsNothingOfACopy(t, e, ref, schemas.VerdictUnschedulable))
	if got := shownSpread(t, e, ref); got != (spreadShown{}) {
		t.Errorf("with no copy left the workload shows %+v, want nothing of them", got)
	}
}

// TestSpreadPlacedElsewhereDropsItsLeastPhase: a Placed verdict on the clusters a spread is shown on (with new
// reasons) keeps each one's phase shown; one that places it on clusters that have not reported shows neither
// the phase of the spread, which was the least of copies no longer shown, nor their status: on one cluster no
// phase, on several each one's Undefined.
func TestSpreadPlacedElsewhereDropsItsLeastPhase(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := shownDeployment(t, e, "team-spread-to-one")
	publishShareStatuses(t, e, ref, "to-one-")
	divided := func(id string, after uint64, reasons map[string]string) {
		publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), id, &schemas.PlacementVerdict{
			Workload: ref, Sequence: seq + after, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide", Reasons: reasons,
			Clusters: []string{"cluster-a", "cluster-b"}, Replicas: map[string]int32{"cluster-a": 6, "cluster-b": 4}})
	}
	divided("to-one-divided", 1000, nil)
	want := spreadShown{clusters: "cluster-a,cluster-b", replicas: "cluster-a=6,cluster-b=4",
		clusterPhases: "cluster-a=Running,cluster-b=Initializing", phase: "Initializing", ready: 8}
	e2eenv.Eventually(t, e2eenv.Settle, "the divided verdict shown with each cluster's phase", func() bool {
		return shownSpread(t, e, ref) == want
	})
	divided("to-one-reasons", 2000, map[string]string{"cluster-c": "does not fit"})
	e2eenv.Eventually(t, e2eenv.Settle, "the new reasons shown", func() bool {
		return e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()[schemas.AnnotationReasons] != ""
	})
	if got := shownSpread(t, e, ref); got != want {
		t.Errorf("the same spread with new reasons shows %+v, want %+v", got, want)
	}

	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "to-one-c", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 3000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide", Clusters: []string{"cluster-c"}})
	var got spreadShown
	e2eenv.Eventually(t, e2eenv.Settle, "the verdict placing it on cluster-c shown", func() bool {
		got = shownSpread(t, e, ref)
		return got.clusters == "cluster-c"
	})
	if want := (spreadShown{clusters: "cluster-c"}); got != want {
		t.Errorf("placed on cluster-c, which has not reported, the workload shows %+v, want %+v", got, want)
	}

	divided("to-one-divided-again", 4000, nil)
	e2eenv.Eventually(t, e2eenv.Settle, "the divided verdict shown again with each cluster's phase", func() bool {
		return shownSpread(t, e, ref) == want
	})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "to-two-new", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 5000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "divide",
		Clusters: []string{"cluster-c", "cluster-d"}})
	e2eenv.Eventually(t, e2eenv.Settle, "the verdict placing it on cluster-c and cluster-d shown", func() bool {
		got = shownSpread(t, e, ref)
		return got.clusters == "cluster-c,cluster-d"
	})
	want = spreadShown{clusters: "cluster-c,cluster-d", clusterPhases: "cluster-c=Undefined,cluster-d=Undefined", phase: "Undefined"}
	if got != want {
		t.Errorf("placed on two clusters neither of which has reported, the workload shows %+v, want %+v", got, want)
	}
}

// TestCopyReportedGoneBeforeTheVerdictIsNotShownRunning: a copy its cluster reported gone while the workload was
// shown placed there (the placer had not decided anew yet) is not shown running once a verdict that does not
// place the workload follows: a copy that went does not keep running.
func TestCopyReportedGoneBeforeTheVerdictIsNotShownRunning(t *testing.T) {
	e := newEnv(t)
	ref, epoch, seq := shownDeployment(t, e, "team-gone-first")
	subject := schemas.WorkloadStatusSubject("cluster-a", ref)
	publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-first-running",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: deploymentStatus(10, 10)})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "gone-first-placed", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 1000, Epoch: epoch, Status: schemas.VerdictPlaced, Policy: "pin", Clusters: []string{"cluster-a"}})
	e2eenv.Eventually(t, e2eenv.Settle, "Placed on cluster-a, Running", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, deploymentKind, ref.Namespace, ref.Name).GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced) && a[schemas.AnnotationPhase] == "Running"
	})
	// Handled in this order: the status writer handles the events stream in order.
	publishDelivery(t, e, schemas.TypeWorkloadStatus, subject, "gone-first-gone",
		&schemas.WorkloadStatus{Cluster: "cluster-a", Workload: ref, Status: deploymentStatus(10, 10), Gone: true})
	publishDelivery(t, e, schemas.TypePlacementVerdict, schemas.VerdictSubject(ref), "gone-first-unschedulable", &schemas.PlacementVerdict{
		Workload: ref, Sequence: seq + 2000, Epoch: epoch, Status: schemas.VerdictUnschedulable, Policy: "pin"})
	e2eenv.Eventually(t, e2eenv.Settle, "Unschedulable, with no cluster, phase or status of the copy that went",
		showsNothingOfACopy(t, e, ref, schemas.VerdictUnschedulable))
}
