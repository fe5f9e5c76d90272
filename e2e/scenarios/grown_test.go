package scenarios

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestGrownJobStaysWhileItFits: a job grown where it runs is packed there with its own running pods counted
// as room, so it stays while its old pods and the new ones fit, and moves once they no longer do.
//
// Worked out from fleets/grown.yaml: the job starts with 2 two-GPU workers on cluster-a's 8-GPU node, and
// its pods run there (the test plays the operator). Grown to 3 workers it needs 6 GPUs: the node has 4 free,
// plus the 4 its own workers take, so it stays. Grown to 5 workers it needs 10 GPUs, more than cluster-a's
// one node has, and moves to cluster-b, whose two nodes fit it.
func TestGrownJobStaysWhileItFits(t *testing.T) {
	e := newScenario(t, "testdata/fleets/grown.yaml", e2eenv.Options{
		PolicyFiles: []string{"testdata/policies/a-then-b.yaml"}})
	const ns, name = "growing", "grown"
	master := Replicas{Count: 1, CPU: "1", Memory: "2Gi"}
	workers := func(n int64) Replicas { return Replicas{Count: n, CPU: "2", Memory: "8Gi", GPUs: 2} }
	submit(t, e, PyTorchJob(ns, name, master, workers(2)))
	WaitPlacedOn(t, e, ns, name, "cluster-a")

	// The operator's pods, bound to cluster-a's node: the master and two workers.
	clusterA := e.Clusters["cluster-a"]
	copyOnA := e2eenv.Get(t, clusterA, PyTorchJobKind, ns, name)
	uid := copyOnA.GetLabels()[schemas.LabelWorkloadUID]
	node := e2eenv.ReadFleetSpec(t, "testdata/fleets/grown.yaml").Clusters[0].AllNodes()[0].Name
	pods := clusterA.Core.CoreV1().Pods(ns)
	for i, r := range []Replicas{master, workers(1), workers(1)} {
		requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(r.CPU), corev1.ResourceMemory: resource.MustParse(r.Memory)}
		limits := corev1.ResourceList{}
		if r.GPUs > 0 {
			gpus := *resource.NewQuantity(r.GPUs, resource.DecimalSI)
			requests["nvidia.com/gpu"], limits["nvidia.com/gpu"] = gpus, gpus
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{schemas.LabelWorkloadUID: uid}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "pytorch", Image: "example.com/train:1",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}}}}
		if _, err := pods.Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			_ = pods.Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
	}
	// Once the Cluster shows 4 GPUs free, the node event saying so is in the streams, before the change below.
	clusters := e.ControlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"})
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a showing its running pods", func() bool {
		c, err := clusters.Get(t.Context(), "cluster-a", metav1.GetOptions{})
		if err != nil {
			return false
		}
		free, _, _ := unstructured.NestedString(c.Object, "status", "free", "nvidia.com/gpu")
		return free == "4"
	})

	submit(t, e, PyTorchJob(ns, name, master, workers(3)))
	e2eenv.Eventually(t, e2eenv.Settle, "the copy on cluster-a grown to 3 workers", func() bool {
		c := e2eenv.Get(t, clusterA, PyTorchJobKind, ns, name)
		if c == nil {
			t.Fatalf("the job grown to 3 workers left cluster-a: %+v", PlacementOf(t, e, ns, name))
		}
		n, _, _ := unstructured.NestedInt64(c.Object, "spec", "pytorchReplicaSpecs", "Worker", "replicas")
		return n == 3
	})
	if p := WaitPlacedOn(t, e, ns, name, "cluster-a"); e2eenv.Get(t, e.Clusters["cluster-b"], PyTorchJobKind, ns, name) != nil {
		t.Fatalf("the job grown to 3 workers has a copy on cluster-b; placement %+v", p)
	}

	submit(t, e, PyTorchJob(ns, name, master, workers(5)))
	p := WaitPlacedOn(t, e, ns, name, "cluster-b")
	if got := p.Reason("cluster-a"); got == "" {
		t.Errorf("no reason given for leaving cluster-a")
	}
}
