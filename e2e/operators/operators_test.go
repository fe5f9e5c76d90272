package operators

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/schemas"
)

var pytorchJobKind = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

// run bounds the waits that include an operator starting and pods running, beyond e2eenv.Settle.
const run = 3 * time.Minute

// newEnv starts the pipeline with the training operator's CRDs on the control plane only (level 1 copies
// them), the a-then-b policy, and no PyTorchJob left from an earlier test.
func newEnv(t *testing.T, pendingTimeout time.Duration) *e2eenv.Env {
	t.Helper()
	crds, err := frameworkcrds.Objects("pytorchjobs.yaml", "mpijobs-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := e2eenv.New(t, e2eenv.Options{
		FleetFile:        fleetFile,
		ControlPlaneCRDs: frameworkcrds.Propagated(crds),
		PolicyFiles:      []string{"testdata/policies/propagate-crds.yaml", "testdata/policies/a-then-b.yaml"},
		CleanKinds:       []schema.GroupVersionKind{pytorchJobKind},
		Placer:           placer.PlacerConfig{PendingTimeout: pendingTimeout},
	})
	// A job submitted before a cluster reports the copied CRD served would be placed elsewhere.
	for name := range e.Clusters {
		e2eenv.Eventually(t, run, name+" reporting "+pytorchJobKind.Kind+" served", func() bool {
			serves, err := e.ClusterServes(t.Context(), name, pytorchJobKind)
			if err != nil {
				t.Fatal(err)
			}
			return serves
		})
	}
	return e
}

// TestPyTorchJobRunsToSucceeded: fleetflow places a PyTorchJob on cluster-a, the real training operator
// there creates its master and worker pods, kube-scheduler binds them to cluster-a's GPU node, kwok runs
// and completes them, the operator marks the job Succeeded, and the control plane shows that status.
func TestPyTorchJobRunsToSucceeded(t *testing.T) {
	e := newEnv(t, 0)
	ns := namespace(t, e, "team-run")
	submit(t, e, pytorchJob("train", ns, "3s"))

	waitJobPods(t, e, "cluster-a", ns, "train", corev1.PodSucceeded)
	e2eenv.Eventually(t, run, "PyTorchJob train Succeeded on the control plane", func() bool {
		e.FailIfFleetExited(t)
		return e2eenv.HasCondition(e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ns, "train"), "Succeeded")
	})
	cp := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ns, "train")
	t.Logf("control plane: cluster %s, phase %s, conditions %v", cp.GetAnnotations()[schemas.AnnotationCluster],
		cp.GetAnnotations()[schemas.AnnotationPhase], conditionTypes(cp))
	if got := cp.GetAnnotations()[schemas.AnnotationCluster]; got != "cluster-a" {
		t.Errorf("control plane says cluster %q, want cluster-a", got)
	}
	if e2eenv.Get(t, e.Clusters["cluster-b"], pytorchJobKind, ns, "train") != nil {
		t.Error("PyTorchJob train also on cluster-b")
	}
}

// TestPendingPodsMoveTheJob: the GPU node of cluster-a, where fleetflow placed the job, is taken by a pod
// fleetflow did not place (a higher-priority blocker created in the cluster itself, which preempts the job's
// pods if they were bound first). kube-scheduler leaves the job's pods Pending, and once they have been
// Pending longer than the placer's pending timeout fleetflow moves the job to cluster-b, where the operator
// creates pods that run.
func TestPendingPodsMoveTheJob(t *testing.T) {
	e := newEnv(t, 10*time.Second)
	ns := namespace(t, e, "team-move")
	// A delay far beyond the test: the pods keep running wherever they run, so the job never completes
	// on cluster-a before the blocker arrives.
	submit(t, e, pytorchJob("moving", ns, "1h"))
	e2eenv.Eventually(t, e2eenv.Settle, "PyTorchJob moving on cluster-a", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, ns, "moving") != nil
	})
	block(t, e.Clusters["cluster-a"])

	e2eenv.Eventually(t, run, "PyTorchJob moving on cluster-b and gone from cluster-a", func() bool {
		e.FailIfFleetExited(t)
		return e2eenv.Get(t, e.Clusters["cluster-b"], pytorchJobKind, ns, "moving") != nil &&
			e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, ns, "moving") == nil
	})
	waitJobPods(t, e, "cluster-b", ns, "moving", corev1.PodRunning)
	cp := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, ns, "moving")
	if got := cp.GetAnnotations()[schemas.AnnotationCluster]; got != "cluster-b" {
		t.Errorf("control plane says cluster %q, want cluster-b", got)
	}
	reasons := cp.GetAnnotations()[schemas.AnnotationReasons]
	t.Logf("control plane: reasons %s", reasons)
	if !strings.Contains(reasons, "cluster-a") || !strings.Contains(reasons, "Pending") {
		t.Errorf("reasons %q do not say that the pods stayed Pending on cluster-a", reasons)
	}
}

func namespace(t *testing.T, e *e2eenv.Env, name string) string {
	t.Helper()
	if err := e.ControlPlane.EnsureNamespace(t.Context(), name, e2eenv.FieldManager, nil); err != nil {
		t.Fatal(err)
	}
	return name
}

func submit(t *testing.T, e *e2eenv.Env, job *unstructured.Unstructured) {
	t.Helper()
	if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gvr := schema.GroupVersionResource{Group: pytorchJobKind.Group, Version: pytorchJobKind.Version, Resource: "pytorchjobs"}
		err := e.ControlPlane.Dynamic.Resource(gvr).Namespace(job.GetNamespace()).Delete(context.Background(), job.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", job.GetName(), err)
		}
	})
}

// pytorchJob is a master and a worker of 2 GPUs each (the 4 GPUs of one node), whose pods kwok completes
// delay after they run.
func pytorchJob(name, namespace, delay string) *unstructured.Unstructured {
	replica := func() map[string]any {
		return map[string]any{"replicas": int64(1), "restartPolicy": "OnFailure", "template": map[string]any{
			"metadata": map[string]any{"annotations": map[string]any{localfleet.KWOKCompleteDelayAnnotation: delay}},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "pytorch", "image": "registry.k8s.io/pause:3.10",
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
					"limits":   map[string]any{"nvidia.com/gpu": "2"},
				},
			}}},
		}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replica(), "Worker": replica()}},
	}}
}

// block takes the 4 GPUs of the cluster's GPU node with a pod of a priority above the job's, created in the
// cluster itself; it is deleted when the test ends.
func block(t *testing.T, c *kube.Clients) {
	t.Helper()
	ctx := t.Context()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "e2e-blocker"}, Value: 1_000_000}
	if _, err := c.Core.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-blocker", Namespace: "default"},
		Spec: corev1.PodSpec{
			PriorityClassName: pc.Name,
			Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
			}}},
		},
	}
	if _, err := c.Core.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		_ = c.Core.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})
	e2eenv.Eventually(t, e2eenv.Settle, "the blocker pod running on a GPU node", func() bool {
		got, err := c.Core.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && strings.HasPrefix(got.Spec.NodeName, "gpu") && got.Status.Phase == corev1.PodRunning
	})
}

func conditionTypes(obj *unstructured.Unstructured) []string {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var types []string
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		types = append(types, m["type"].(string)+"="+m["status"].(string))
	}
	return types
}

// waitJobPods waits until the PyTorchJob's master and worker pods are in phase on the cluster, bound to its GPU
// node.
func waitJobPods(t *testing.T, e *e2eenv.Env, cluster, ns, job string, phase corev1.PodPhase) {
	t.Helper()
	e.WaitPods(t, run, e2eenv.PodsWant{Cluster: cluster, Namespace: ns, Selector: "training.kubeflow.org/job-name=" + job,
		N: 2, Phase: phase, NodePrefix: "gpu"})
}
