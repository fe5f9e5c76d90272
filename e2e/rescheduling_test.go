package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/schemas"
)

// placeJob submits the test job in namespace and waits until it runs on cluster-a, where a-then-b puts it.
func placeJob(t *testing.T, e *e2eenv.Env, namespace string) *unstructured.Unstructured {
	t.Helper()
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace(namespace)
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	var placed *unstructured.Unstructured
	e2eenv.Eventually(t, e2eenv.Settle, "the job on cluster-a", func() bool {
		placed = e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, namespace, job.GetName())
		return placed != nil
	})
	return placed
}

// waitMoved waits until the job runs on cluster-b and no longer on cluster-a, and returns the reason the
// control plane gives for leaving cluster-a.
func waitMoved(t *testing.T, e *e2eenv.Env, namespace, name string) string {
	t.Helper()
	e2eenv.Eventually(t, e2eenv.Settle, "the job on cluster-b and gone from cluster-a", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-b"], pytorchJobKind, namespace, name) != nil &&
			e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, namespace, name) == nil
	})
	var reasons string
	e2eenv.Eventually(t, e2eenv.Settle, "the control plane saying why", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, namespace, name).GetAnnotations()
		reasons = a[schemas.AnnotationReasons]
		return a[schemas.AnnotationCluster] == "cluster-b" && strings.Contains(reasons, "cluster-a: ")
	})
	return reasons
}

// TestPendingWorkloadMovesToAClusterThatFits: the job's pods stay Pending on cluster-a (as when a
// cluster's reported capacity is not really there) for longer than the pending timeout, so the job moves
// to cluster-b, which fits it; it is applied there before it is deleted from cluster-a.
func TestPendingWorkloadMovesToAClusterThatFits(t *testing.T) {
	e := e2eenv.New(t, func() e2eenv.Options {
		o := options()
		o.Placer = placer.PlacerConfig{HeartbeatTimeout: 6 * time.Second, PendingTimeout: 3 * time.Second}
		return o
	}())
	placed := placeJob(t, e, "team-pending")
	// Act as the training operator: a worker pod owned by the job, which no scheduler ever binds.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: placed.GetName() + "-worker-0", Namespace: "team-pending",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: placed.GetAPIVersion(), Kind: placed.GetKind(),
			Name: placed.GetName(), UID: placed.GetUID()}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "example.com/mnist:1"}}}}
	if _, err := e.Clusters["cluster-a"].Core.CoreV1().Pods("team-pending").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	reasons := waitMoved(t, e, "team-pending", placed.GetName())
	if !strings.Contains(reasons, "cluster-a: its pods stayed Pending there for more than 3s") {
		t.Errorf("reasons = %q, want cluster-a rejected for pending pods", reasons)
	}
	assertAppliedBeforeDeleted(t, e, "team-pending", placed.GetName())
}

// newReschedulingEnv starts the package's environment with the a-then-b policy rescheduling on failure, and
// puts the package's shared policy back for the tests that follow.
func newReschedulingEnv(t *testing.T) *e2eenv.Env {
	t.Helper()
	o := options()
	o.PolicyFiles = []string{"testdata/policies/a-then-b-reschedule.yaml"}
	e := e2eenv.New(t, o)
	t.Cleanup(func() {
		_ = e.ControlPlane.Apply(context.Background(), e2eenv.FieldManager, e2eenv.ReadObjects(t, "testdata/policies/a-then-b.yaml")...)
	})
	return e
}

// TestFailedWorkloadIsRescheduledWhenThePolicyAsks: the job fails on cluster-a (its status maps to Failed
// through the built-in PyTorchJob RI) under a policy with rescheduleOnFailure, so it moves to cluster-b.
func TestFailedWorkloadIsRescheduledWhenThePolicyAsks(t *testing.T) {
	e := newReschedulingEnv(t)
	placed := placeJob(t, e, "team-failed")
	placed.Object["status"] = map[string]any{"conditions": []any{
		map[string]any{"type": "Created", "status": "True"},
		map[string]any{"type": "Failed", "status": "True", "message": "worker 0 exited with 137"},
	}}
	gvr, _, err := e.Clusters["cluster-a"].ResourceFor(placed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Clusters["cluster-a"].Dynamic.Resource(gvr).Namespace("team-failed").UpdateStatus(t.Context(), placed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	reasons := waitMoved(t, e, "team-failed", placed.GetName())
	if !strings.Contains(reasons, "cluster-a: the workload failed there") {
		t.Errorf("reasons = %q, want cluster-a rejected because the job failed there", reasons)
	}
	assertAppliedBeforeDeleted(t, e, "team-failed", placed.GetName())
}

// TestRefusedApplyIsRescheduledWhenThePolicyAsks: cluster-a's apiserver refuses the job (an admission policy
// there takes no jobs of the team), so its applier gives up on the Apply, and under a policy with
// rescheduleOnFailure the job moves to cluster-b, with the apiserver's message as the reason.
func TestRefusedApplyIsRescheduledWhenThePolicyAsks(t *testing.T) {
	e := newReschedulingEnv(t)
	refuseJobsOf(t, e.Clusters["cluster-a"], "team-refused")

	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace("team-refused")
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	reasons := waitMoved(t, e, "team-refused", job.GetName())
	if !strings.Contains(reasons, "cluster-a: its applier gave up applying it there") || !strings.Contains(reasons, refusal) {
		t.Errorf("reasons = %q, want cluster-a rejected with its apiserver's refusal", reasons)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the placement error cleared once cluster-b applied the job", func() bool {
		a := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-refused", job.GetName()).GetAnnotations()
		_, failed := a[schemas.AnnotationPlacementError]
		return !failed
	})
}

// refusal is the message of the admission policy refuseJobsOf installs.
const refusal = "this cluster takes no jobs of this team"

// refuseJobsOf makes cluster's apiserver refuse every PyTorchJob in namespace with a ValidatingAdmissionPolicy,
// and waits until it does.
func refuseJobsOf(t *testing.T, cluster *kube.Clients, namespace string) {
	t.Helper()
	ctx := t.Context()
	name := "fleetflow-e2e-refuse-" + namespace
	fail := admissionv1.Fail
	vap := &admissionv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule: admissionv1.Rule{APIGroups: []string{"kubeflow.org"}, APIVersions: []string{"*"},
						Resources: []string{"pytorchjobs"}},
				}}}},
			Validations: []admissionv1.Validation{{Expression: "object.metadata.namespace != '" + namespace + "'", Message: refusal}},
		}}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}}}
	admission := cluster.Core.AdmissionregistrationV1()
	if _, err := admission.ValidatingAdmissionPolicies().Create(ctx, vap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admission.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admission.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	})
	// The apiserver enforces a new policy once it has compiled it; a dry-run create in the namespace (which the
	// applier would create) tells when.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := cluster.Core.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	probe := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	probe.SetNamespace(namespace)
	gvr, _, err := cluster.ResourceFor(probe)
	if err != nil {
		t.Fatal(err)
	}
	var last error
	e2eenv.Eventually(t, e2eenv.Settle, "cluster's apiserver refusing the team's jobs", func() bool {
		_, last = cluster.Dynamic.Resource(gvr).Namespace(namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), refusal)
	})
	if !apierrors.IsInvalid(last) && !apierrors.IsForbidden(last) {
		t.Errorf("the apiserver refuses with %v, want an error the applier does not retry", last)
	}
}

// assertAppliedBeforeDeleted checks the audit trail: cluster-b applied the job before cluster-a was told
// to delete it.
func assertAppliedBeforeDeleted(t *testing.T, e *e2eenv.Env, namespace, name string) {
	t.Helper()
	sel, err := audit.ParseWorkloadSelector("PyTorchJob/" + namespace + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	err = audit.AuditTail(t.Context(), e.Bus.JetStream, audit.AuditQuery{Workload: sel}, func(r audit.AuditRecord) error {
		switch p := r.Payload.(type) {
		case *schemas.PlacementApplied:
			steps = append(steps, "applied "+string(p.Action)+" "+p.Cluster)
		case *schemas.PlacementDecided:
			steps = append(steps, "decided "+string(p.Action)+" "+p.Cluster)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	appliedB, deleteA := -1, -1
	for i, s := range steps {
		if s == "applied Apply cluster-b" && appliedB < 0 {
			appliedB = i
		}
		if s == "decided Delete cluster-a" && deleteA < 0 {
			deleteA = i
		}
	}
	if appliedB < 0 || deleteA < 0 || appliedB > deleteA {
		t.Errorf("want cluster-b's apply confirmed before cluster-a's delete was decided; audit: %v", steps)
	}
}

// TestCopyDeletedInItsClusterComesBack: the copy of a placed job deleted in its workload cluster, as a user
// with access to it might, is applied there again, since the control plane says the job runs there.
func TestCopyDeletedInItsClusterComesBack(t *testing.T) {
	e := newEnv(t)
	placed := placeJob(t, e, "team-drift")
	cluster := e.Clusters["cluster-a"]
	gvr, _, err := cluster.ResourceFor(placed)
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Dynamic.Resource(gvr).Namespace("team-drift").Delete(t.Context(), placed.GetName(),
		metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "a new copy on cluster-a", func() bool {
		again := e2eenv.Get(t, cluster, pytorchJobKind, "team-drift", placed.GetName())
		return again != nil && again.GetUID() != placed.GetUID()
	})
}

// TestCopyDeletedWhileFleetflowWasDownComesBack: a copy deleted in its workload cluster while no part of
// fleetflow ran is seen deleted by no informer; the restarted cluster producer finds it missing against the
// streams' state, and the placer applies it again.
func TestCopyDeletedWhileFleetflowWasDownComesBack(t *testing.T) {
	e := newEnv(t)
	placed := placeJob(t, e, "team-drift-down")
	cluster := e.Clusters["cluster-a"]
	gvr, _, err := cluster.ResourceFor(placed)
	if err != nil {
		t.Fatal(err)
	}
	ref := schemas.ObjectRef{APIVersion: placed.GetAPIVersion(), Kind: placed.GetKind(), Namespace: placed.GetNamespace(),
		Name: placed.GetName(), UID: placed.GetLabels()[schemas.LabelWorkloadUID]}
	state, err := e.Bus.JetStream.Stream(t.Context(), schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the copy's state in the streams", func() bool {
		_, err := state.GetLastMsgForSubject(t.Context(), schemas.WorkloadStatusSubject("cluster-a", ref))
		return err == nil
	})
	e.Restart(func() {
		if err := cluster.Dynamic.Resource(gvr).Namespace("team-drift-down").Delete(t.Context(), placed.GetName(),
			metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	e2eenv.Eventually(t, e2eenv.Settle, "a new copy on cluster-a", func() bool {
		again := e2eenv.Get(t, cluster, pytorchJobKind, "team-drift-down", placed.GetName())
		return again != nil && again.GetUID() != placed.GetUID()
	})
}

// TestDeletedClusterLeavesNoCopy: deleting the Cluster a job runs on moves the job to the other cluster and
// deletes its copy from the one that left: the cluster's applier is kept until it carried that Delete out. Its
// producer stops at the deletion, the state stream ends up holding nothing of the cluster, and a restarted placer
// neither counts it nor logs it Ready: the heartbeats and APIs its runner sent after the deletion stayed in the
// state stream for good, and every rebuild found the cluster beating.
func TestDeletedClusterLeavesNoCopy(t *testing.T) {
	opts := options()
	opts.Placer = e2eenv.PlacerConfig()
	opts.Placer.StatePruneGrace = time.Second
	e := e2eenv.New(t, opts)
	placed := placeJob(t, e, "team-leaving")
	clusters := e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"})
	if err := clusters.Delete(t.Context(), "cluster-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the job on cluster-b and gone from cluster-a", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-b"], pytorchJobKind, "team-leaving", placed.GetName()) != nil &&
			e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-leaving", placed.GetName()) == nil
	})
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a's runner stopped", func() bool {
		return logged(e.Logs.String(), `msg="cluster runner stopped"`, "cluster=cluster-a")
	})

	events, err := e.Bus.JetStream.Stream(t.Context(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	deletion, err := events.GetLastMsgForSubject(t.Context(), schemas.ClusterSpecSubject("cluster-a"))
	if err != nil || deletion.Header.Get("ce-type") != schemas.TypeClusterDeleted {
		t.Fatalf("last event of cluster-a's spec = %v, %v; want its deletion", deletion, err)
	}
	// A beat on its way as the runner heard of the deletion may land just after it; none comes later.
	for _, subject := range []string{schemas.ClusterHeartbeatSubject("cluster-a"), schemas.ClusterAPIsSubject("cluster-a")} {
		last, err := events.GetLastMsgForSubject(t.Context(), subject)
		if err != nil {
			t.Fatalf("last event on %s: %v", subject, err)
		}
		if last.Time.After(deletion.Time.Add(500 * time.Millisecond)) {
			t.Errorf("%s stored at %s, after cluster-a's deletion at %s", subject, last.Time, deletion.Time)
		}
	}

	state, err := e.Bus.JetStream.Stream(t.Context(), schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	e2eenv.Eventually(t, e2eenv.Settle, "nothing of cluster-a left in the state stream", func() bool {
		left = nil
		for _, filter := range schemas.ClusterStateFilters("cluster-a") {
			info, err := state.Info(t.Context(), jetstream.WithSubjectFilter(filter))
			if err != nil {
				t.Fatal(err)
			}
			for subject := range info.State.Subjects {
				left = append(left, subject)
			}
		}
		return len(left) == 0
	})

	mark := len(e.Logs.String())
	e.Restart(func() {})
	e2eenv.Eventually(t, e2eenv.Settle, "the restarted placer's view rebuilt", func() bool {
		return strings.Contains(e.Logs.String()[mark:], "placer view rebuilt")
	})
	rebuilt := e.Logs.String()[mark:]
	if !strings.Contains(rebuilt, "clusters=1 ") {
		t.Errorf("the rebuilt view does not count cluster-b alone:\n%s", rebuilt)
	}
	if logged(rebuilt, `msg="cluster Ready"`, "cluster=cluster-a") {
		t.Errorf("the restarted placer logged the deleted cluster-a Ready:\n%s", rebuilt)
	}
}

// logged reports whether a line of logs holds every one of parts.
func logged(logs string, parts ...string) bool {
	for line := range strings.Lines(logs) {
		all := true
		for _, part := range parts {
			all = all && strings.Contains(line, part)
		}
		if all {
			return true
		}
	}
	return false
}
