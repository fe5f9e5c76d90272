package pinner_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/pinner"
	"github.com/fleetflow/fleetflow/schemas"
)

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithClusters("c1")))
}

// startPinner runs a pinner on the fleet's cluster for the test, and returns the cluster's clients.
func startPinner(t *testing.T) *kube.Clients {
	t.Helper()
	clients, err := kube.NewClients(localfleettest.Fleet(t).Workloads[0].RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	p := &pinner.Pinner{Cluster: "c1", Clients: clients, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Identity: t.Name()}
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return clients
}

// namespace makes a namespace of its own for a test.
func namespace(t *testing.T, clients *kube.Clients) string {
	t.Helper()
	ns, err := clients.Core.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "pin-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// copyWithPins creates the object the pods are pinned by: a ConfigMap stands for the copy, with pins unless nil.
func copyWithPins(t *testing.T, clients *kube.Clients, ns, name string, pins schemas.Pins) string {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if pins != nil {
		cm.Annotations = map[string]string{schemas.AnnotationPins: pins.String()}
	}
	if _, err := clients.Core.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return schemas.PinCopy("ConfigMap", "v1", name)
}

// podBuilder builds a pod of a pinned copy's component, gated as the copy's templates make them.
type podBuilder struct{ pod *corev1.Pod }

func gatedPod(name, copyName, component string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schemas.LabelPinned: "true"},
			Annotations: map[string]string{schemas.AnnotationPinCopy: copyName, schemas.AnnotationPinComponent: component}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: schemas.SchedulingGatePinned}}},
	}}
}

func (b *podBuilder) inZone(zone string) *podBuilder {
	b.pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}}}
	return b
}

func (b *podBuilder) create(t *testing.T, clients *kube.Clients, ns string) {
	t.Helper()
	if _, err := clients.Core.CoreV1().Pods(ns).Create(context.Background(), b.pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pinnedNodes waits until no pod of ns is gated by the pinner, and returns the node each pod is pinned to ("" for
// none).
func pinnedNodes(t *testing.T, clients *kube.Clients, ns string, pods int) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes map[string]string
	err := natscluster.Poll(ctx, "every pod released by the pinner", func() error {
		list, err := clients.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != pods {
			return fmt.Errorf("%d pods, want %d", len(list.Items), pods)
		}
		nodes = map[string]string{}
		for _, pod := range list.Items {
			for _, g := range pod.Spec.SchedulingGates {
				if g.Name == schemas.SchedulingGatePinned {
					return fmt.Errorf("pod %s is still gated", pod.Name)
				}
			}
			nodes[pod.Name] = nodeOf(&pod)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// nodeOf reads the node a pod's required affinity pins it to, "" for none; it fails on a term without the pin.
func nodeOf(pod *corev1.Pod) string {
	if pod.Spec.Affinity == nil || pod.Spec.Affinity.NodeAffinity == nil {
		return ""
	}
	node := ""
	for _, term := range pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		found := ""
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				found = f.Values[0]
			}
		}
		if found == "" || node != "" && found != node {
			return "term without the pin"
		}
		node = found
	}
	return node
}

func count(nodes map[string]string) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		out[n]++
	}
	return out
}

func TestPinnerPinsEachPodToAPackedNode(t *testing.T) {
	clients := startPinner(t)
	ns := namespace(t, clients)
	copyName := copyWithPins(t, clients, ns, "job", schemas.Pins{"worker": {"n1": 2, "n2": 1}, "master": {"n3": 1}})
	for i := range 3 {
		gatedPod(fmt.Sprintf("worker-%d", i), copyName, "worker").create(t, clients, ns)
	}
	gatedPod("master-0", copyName, "master").inZone("a").create(t, clients, ns)
	gatedPod("worker-extra", copyName, "worker").create(t, clients, ns)

	nodes := pinnedNodes(t, clients, ns, 5)
	if got := count(nodes); got["n1"] != 2 || got["n2"] != 1 || got["n3"] != 1 || got[""] != 1 {
		t.Fatalf("pods per node = %v (%v), want n1: 2, n2: 1, n3: 1 and the pod beyond the packed ones unpinned", got, nodes)
	}
	if nodes["master-0"] != "n3" {
		t.Fatalf("master-0 pinned to %q, want n3 (its zone term kept, the pin added to it)", nodes["master-0"])
	}
	if nodes["worker-extra"] != "" {
		t.Fatalf("worker-extra, created last, pinned to %q; want it let go unpinned", nodes["worker-extra"])
	}
}

func TestPinnerGivesAGonePodsNodeToItsReplacement(t *testing.T) {
	clients := startPinner(t)
	ns := namespace(t, clients)
	copyName := copyWithPins(t, clients, ns, "job", schemas.Pins{"worker": {"n1": 1, "n2": 1}})
	gatedPod("worker-0", copyName, "worker").create(t, clients, ns)
	gatedPod("worker-1", copyName, "worker").create(t, clients, ns)
	first := pinnedNodes(t, clients, ns, 2)
	if err := clients.Core.CoreV1().Pods(ns).Delete(context.Background(), "worker-1", metav1.DeleteOptions{
		GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	gatedPod("worker-1b", copyName, "worker").create(t, clients, ns)
	second := pinnedNodes(t, clients, ns, 2)
	if second["worker-1b"] != first["worker-1"] || second["worker-0"] != first["worker-0"] {
		t.Fatalf("after replacing worker-1 (on %q): %v, want the replacement on its node", first["worker-1"], second)
	}
}

func TestPinnerLetsPodsGoWithoutPins(t *testing.T) {
	clients := startPinner(t)
	ns := namespace(t, clients)
	unpinned := copyWithPins(t, clients, ns, "plain", nil)
	gatedPod("of-a-copy-without-pins", unpinned, "worker").create(t, clients, ns)
	gatedPod("of-a-copy-that-is-gone", schemas.PinCopy("ConfigMap", "v1", "gone"), "worker").create(t, clients, ns)
	gatedPod("of-a-malformed-copy-name", "nonsense", "worker").create(t, clients, ns)
	for pod, node := range pinnedNodes(t, clients, ns, 3) {
		if node != "" {
			t.Errorf("pod %s pinned to %q, want it let go unpinned", pod, node)
		}
	}
}
