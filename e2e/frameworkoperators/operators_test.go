package frameworkoperators

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/schemas"
)

// run bounds the waits that include the operators starting and pods running, beyond e2eenv.Settle.
const run = 4 * time.Minute

// crdFiles are the operators' CRDs: the corpus's real ones (../shared/corpus next to the repository) when it
// is there, else internal/frameworkcrds' minimal ones (real names, a status subresource, any field kept).
var crdFiles = []struct{ corpus, own string }{
	{"kuberay/crds/ray.io_rayclusters.yaml", "rayclusters.yaml"},
	{"kuberay/crds/ray.io_rayjobs.yaml", "rayjobs.yaml"},
	{"kuberay/crds/ray.io_rayservices.yaml", "rayservices.yaml"},
	{"jobset/crds/jobset.x-k8s.io_jobsets.yaml", "jobsets.yaml"},
	{"lws/crds/leaderworkerset.x-k8s.io_leaderworkersets.yaml", "leaderworkersets.yaml"},
}

var (
	rayClusterKind = schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}
	jobSetKind     = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}
	lwsKind        = schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}
)

// TestOperatorsRunWorkloads: fleetflow copies the operators' CRDs to the workload clusters, where the
// operators then start, and places a RayCluster, a JobSet and a LeaderWorkerSet on cluster-a. Each one's
// operator creates its pods there, kube-scheduler binds them, kwok runs them, and the operator's status and
// the phase fleetflow derives from it show on the control plane.
func TestOperatorsRunWorkloads(t *testing.T) {
	localfleettest.RequireOperators(t, operators...)
	e := e2eenv.New(t, e2eenv.Options{
		FleetFile:   fleetFile,
		PolicyFiles: []string{"testdata/policies/propagate-crds.yaml", "testdata/policies/a-then-b.yaml"},
		CleanKinds:  []schema.GroupVersionKind{rayClusterKind, jobSetKind, lwsKind},
	})
	installCRDs(t, e)
	for name := range e.Clusters {
		e2eenv.Eventually(t, run, "the operators running in "+name, func() bool {
			e.FailIfFleetExited(t)
			return len(e.Fleet.RunningOperators(name)) == len(operators)
		})
	}
	ns := "team-operators"
	if err := e.ControlPlane.EnsureNamespace(t.Context(), ns, e2eenv.FieldManager, nil); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		obj      *unstructured.Unstructured
		selector string // labels of the pods its operator creates
		pods     int
		// shown reports whether the control plane's copy carries the operator's status.
		shown func(cp *unstructured.Unstructured) bool
	}{
		{
			name: "RayCluster", obj: rayCluster("ray", ns), selector: "ray.io/cluster=ray", pods: 2,
			shown: func(cp *unstructured.Unstructured) bool {
				state, _, _ := unstructured.NestedString(cp.Object, "status", "state")
				return state == "ready"
			},
		},
		{
			name: "JobSet", obj: jobSet("train", ns), selector: "jobset.sigs.k8s.io/jobset-name=train", pods: 2,
			shown: func(cp *unstructured.Unstructured) bool {
				statuses, _, _ := unstructured.NestedSlice(cp.Object, "status", "replicatedJobsStatus")
				for _, s := range statuses {
					m, _ := s.(map[string]any)
					if m["name"] == "workers" && m["ready"] == int64(2) {
						return true
					}
				}
				return false
			},
		},
		{
			name: "LeaderWorkerSet", obj: leaderWorkerSet("serve", ns), selector: "leaderworkerset.sigs.k8s.io/name=serve", pods: 2,
			shown: func(cp *unstructured.Unstructured) bool { return e2eenv.HasCondition(cp, "Available") },
		},
	}
	for _, tt := range tests {
		if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, tt.obj); err != nil {
			t.Fatal(err)
		}
		cleanup(t, e, tt.obj)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gvk := tt.obj.GroupVersionKind()
			e.WaitPods(t, run, e2eenv.PodsWant{Cluster: "cluster-a", Namespace: ns, Selector: tt.selector, N: tt.pods, Phase: corev1.PodRunning})
			var cp *unstructured.Unstructured
			e2eenv.Eventually(t, run, tt.name+" status and phase Running on the control plane", func() bool {
				e.FailIfFleetExited(t)
				cp = e2eenv.Get(t, e.ControlPlane, gvk, ns, tt.obj.GetName())
				return cp != nil && tt.shown(cp) && cp.GetAnnotations()[schemas.AnnotationPhase] == "Running"
			})
			status, _, _ := unstructured.NestedMap(cp.Object, "status")
			t.Logf("control plane: cluster %s, phase %s, status %v", cp.GetAnnotations()[schemas.AnnotationCluster],
				cp.GetAnnotations()[schemas.AnnotationPhase], status)
			if got := cp.GetAnnotations()[schemas.AnnotationCluster]; got != "cluster-a" {
				t.Errorf("control plane says cluster %q, want cluster-a", got)
			}
			if e2eenv.Get(t, e.Clusters["cluster-b"], gvk, ns, tt.obj.GetName()) != nil {
				t.Errorf("%s also on cluster-b", tt.name)
			}
		})
	}
}

// installCRDs applies the operators' CRDs to the control plane, labelled for the level-1 policy that copies
// them to every workload cluster.
func installCRDs(t *testing.T, e *e2eenv.Env) {
	t.Helper()
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	corpus := filepath.Join(filepath.Dir(root), "shared", "corpus")
	if _, err := os.Stat(corpus); err != nil {
		t.Logf("no corpus at %s: using internal/frameworkcrds' minimal CRDs", corpus)
		corpus = ""
	}
	for _, f := range crdFiles {
		path := filepath.Join(root, "internal", "frameworkcrds", f.own)
		if corpus != "" {
			path = filepath.Join(corpus, f.corpus)
		}
		for _, crd := range frameworkcrds.Propagated(e2eenv.ReadObjects(t, path)) {
			if err := e.ControlPlane.Apply(t.Context(), e2eenv.FieldManager, crd); err != nil {
				t.Fatalf("install %s: %v", path, err)
			}
		}
	}
}

// container is one CPU-only container of 1 CPU.
func container(name string) map[string]any {
	return map[string]any{"name": name, "image": "registry.k8s.io/pause:3.10", "resources": map[string]any{
		"requests": map[string]any{"cpu": "1", "memory": "1Gi"},
		"limits":   map[string]any{"cpu": "1", "memory": "1Gi"},
	}}
}

func object(gvk schema.GroupVersionKind, name, namespace string, spec map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     spec,
	}}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// rayCluster is a head and one worker.
func rayCluster(name, namespace string) *unstructured.Unstructured {
	return object(rayClusterKind, name, namespace, map[string]any{
		"rayVersion": "2.46.0",
		"headGroupSpec": map[string]any{"rayStartParams": map[string]any{},
			"template": map[string]any{"spec": map[string]any{"containers": []any{container("ray-head")}}}},
		"workerGroupSpecs": []any{map[string]any{
			"groupName": "workers", "replicas": int64(1), "minReplicas": int64(1), "maxReplicas": int64(1),
			"rayStartParams": map[string]any{},
			"template":       map[string]any{"spec": map[string]any{"containers": []any{container("ray-worker")}}},
		}},
	})
}

// jobSet is two Jobs of one pod each, which kwok keeps running far beyond the test.
func jobSet(name, namespace string) *unstructured.Unstructured {
	return object(jobSetKind, name, namespace, map[string]any{
		"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{
				"parallelism": int64(1), "completions": int64(1), "backoffLimit": int64(0),
				"template": map[string]any{
					"metadata": map[string]any{"annotations": map[string]any{localfleet.KWOKCompleteDelayAnnotation: "1h"}},
					"spec":     map[string]any{"restartPolicy": "Never", "containers": []any{container("train")}},
				},
			}},
		}},
	})
}

// leaderWorkerSet is one group of a leader and a worker.
func leaderWorkerSet(name, namespace string) *unstructured.Unstructured {
	return object(lwsKind, name, namespace, map[string]any{
		"replicas": int64(1),
		"leaderWorkerTemplate": map[string]any{
			"size":           int64(2),
			"workerTemplate": map[string]any{"spec": map[string]any{"containers": []any{container("server")}}},
		},
	})
}

// cleanup deletes what the test submitted, so that a later test in the package starts from nothing.
func cleanup(t *testing.T, e *e2eenv.Env, obj *unstructured.Unstructured) {
	t.Helper()
	t.Cleanup(func() {
		gvk := obj.GroupVersionKind()
		gvr := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: strings.ToLower(gvk.Kind) + "s"}
		err := e.ControlPlane.Dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", obj.GetName(), err)
		}
	})
}
