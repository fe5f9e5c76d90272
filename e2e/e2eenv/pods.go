package e2eenv

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FailIfFleetExited ends the test when a process of the local fleet (an apiserver, kube-scheduler, an
// operator, ...) has exited, with the end of its log: a wait for pods would otherwise only time out.
func (e *Env) FailIfFleetExited(t *testing.T) {
	t.Helper()
	if err := e.Fleet.ExitErr(); err != nil {
		t.Fatal(err)
	}
}

// PodsWant is what WaitPods waits for: N pods matching Selector in Namespace of Cluster, each bound to a node
// whose name starts with NodePrefix and in phase Phase.
type PodsWant struct {
	Cluster, Namespace, Selector string
	N                            int
	Phase                        corev1.PodPhase
	NodePrefix                   string
}

// WaitPods waits, up to timeout, for the pods of want, and logs where they are.
func (e *Env) WaitPods(t *testing.T, timeout time.Duration, want PodsWant) {
	t.Helper()
	c := e.Clusters[want.Cluster]
	var last []string
	what := want.Selector + " pods " + string(want.Phase) + " on " + want.Cluster
	Eventually(t, timeout, what, func() bool {
		e.FailIfFleetExited(t)
		pods, err := c.Core.CoreV1().Pods(want.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: want.Selector})
		if err != nil {
			return false
		}
		last = last[:0]
		ok := len(pods.Items) == want.N
		for _, pod := range pods.Items {
			last = append(last, pod.Name+"@"+pod.Spec.NodeName+"="+string(pod.Status.Phase))
			ok = ok && pod.Spec.NodeName != "" && strings.HasPrefix(pod.Spec.NodeName, want.NodePrefix) &&
				pod.Status.Phase == want.Phase
		}
		return ok
	})
	t.Logf("%s: %v", what, last)
}

// HasCondition reports whether the object's status has the condition with status True; false for nil.
func HasCondition(obj *unstructured.Unstructured, condType string) bool {
	if obj == nil {
		return false
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == condType && m["status"] == "True" {
			return true
		}
	}
	return false
}
