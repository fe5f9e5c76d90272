package localfleet_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetflow/fleetflow/internal/frameworkcrds"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

var pytorchJobGVR = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// TestStartOperators starts the training operator in a workload cluster that runs pods once its CRDs are
// served there, and checks that it runs a PyTorchJob to Succeeded: it creates the pods, kube-scheduler binds
// them to KWOK nodes, and kwok completes them after the delay their annotation asks for.
func TestStartOperators(t *testing.T) {
	binDir := localfleettest.RequireOperators(t, "training-operator")
	unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	fleet, err := localfleet.Start(ctx, localfleet.Options{
		Dir:      t.TempDir(),
		Clusters: []string{"east"},
		BinDir:   binDir,
		Logger:   slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		RunPods:  true,
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer func() { _ = fleet.Stop(context.Background()) }()
	if err := localfleet.Seed(ctx, fleet, readFleetSpec(t, filepath.Join("testdata", "runpods.yaml"))); err != nil {
		t.Fatalf("Seed: %v", err)
	}
	east, _ := fleet.Cluster("east")
	dyn := dynamic.NewForConfigOrDie(east.RESTConfig())
	client := kubernetes.NewForConfigOrDie(east.RESTConfig())

	// StartOperators waits for the CRDs, which arrive while it waits, as fleetflow's copies would.
	started := make(chan error, 1)
	go func() { started <- fleet.StartOperators(ctx, "east", "training-operator") }()
	applyCRDs(t, ctx, dyn)
	if err := <-started; err != nil {
		t.Fatalf("StartOperators: %v", err)
	}

	t.Run("recorded as a component", func(t *testing.T) {
		state, err := localfleet.ReadState(fleet.Dir)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, c := range state.Clusters[1].Components {
			if c.Name == "training-operator" {
				found = c.Operator && localfleet.ProcessAlive(c.PID) && c.Port > 0
			}
		}
		if !found {
			t.Errorf("state of east has no running training-operator: %+v", state.Clusters[1].Components)
		}
	})

	t.Run("pytorchjob succeeds", func(t *testing.T) {
		job := pytorchJob("train", "default", "2s", "2")
		if _, err := dyn.Resource(pytorchJobGVR).Namespace("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 3*time.Minute, func() bool {
			if err := fleet.ExitErr(); err != nil {
				t.Fatal(err)
			}
			got, err := dyn.Resource(pytorchJobGVR).Namespace("default").Get(ctx, "train", metav1.GetOptions{})
			return err == nil && jobCondition(got, "Succeeded")
		}, "PyTorchJob train Succeeded")
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-name=train"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) != 2 {
			t.Fatalf("%d pods of train, want a master and a worker", len(pods.Items))
		}
		for _, pod := range pods.Items {
			if !strings.HasPrefix(pod.Spec.NodeName, "gpu-") {
				t.Errorf("pod %s bound to %q, want a gpu node", pod.Name, pod.Spec.NodeName)
			}
			if pod.Status.Phase != corev1.PodSucceeded {
				t.Errorf("pod %s is %s, want Succeeded", pod.Name, pod.Status.Phase)
			}
		}
	})

	t.Run("unknown operator", func(t *testing.T) {
		err := fleet.StartOperators(ctx, "east", "kuberay-typo")
		if err == nil || !strings.Contains(err.Error(), "training-operator") {
			t.Errorf("StartOperators(kuberay-typo) = %v, want an error listing the known operators", err)
		}
	})

	if err := fleet.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, pid := range fleet.PIDs() {
		if localfleet.ProcessAlive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// applyCRDs creates the training operator's CRDs, with a schema that keeps every field: the operator reads
// only the fields it knows.
func applyCRDs(t *testing.T, ctx context.Context, dyn dynamic.Interface) {
	t.Helper()
	crds, err := frameworkcrds.Objects("pytorchjobs.yaml", "mpijobs-v1.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.GetName(), err)
		}
	}
}

// pytorchJob is a PyTorchJob of a master and a worker with gpus GPUs each, whose pods kwok completes delay
// after they run.
func pytorchJob(name, namespace, delay, gpus string) *unstructured.Unstructured {
	template := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{localfleet.KWOKCompleteDelayAnnotation: delay}},
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"name": "pytorch", "image": "registry.k8s.io/pause:3.10",
				"resources": map[string]any{
					"requests": map[string]any{"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus},
					"limits":   map[string]any{"nvidia.com/gpu": gpus},
				},
			}},
		},
	}
	replica := func() map[string]any {
		return map[string]any{"replicas": int64(1), "restartPolicy": "OnFailure", "template": template}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"pytorchReplicaSpecs": map[string]any{"Master": replica(), "Worker": replica()}},
	}}
}

func jobCondition(obj *unstructured.Unstructured, condType string) bool {
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}
