package producers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

func TestNodeStateSumsEffectiveRequestsOfNonTerminalPods(t *testing.T) {
	b := newBench(t)
	const ns, nodeName = "capacity", "node-capacity"
	b.namespace(ns)
	node := b.createNode(nodeSpec{
		name:        nodeName,
		labels:      map[string]string{"gpu": "a100"},
		taints:      []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}},
		allocatable: resources("cpu=8,memory=32Gi,nvidia.com/gpu=4,pods=110"),
		ready:       true,
	})

	b.runtimeClassWithOverhead("with-overhead", "cpu=100m")

	// Owner chain: pod -> ConfigMap "middle" -> ConfigMap "top", which carries the workload uid label.
	configMaps := b.clients.Core.CoreV1().ConfigMaps(ns)
	top, err := configMaps.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "top", Labels: map[string]string{schemas.LabelWorkloadUID: "wl-chain"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	middle, err := configMaps.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "middle", OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: top.Name,
			UID: top.UID, Controller: new(true)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{top.Name, middle.Name} {
			_ = configMaps.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})

	// A: cpu=1,memory=2Gi requested, plus a container with limits only (cpu=500m,memory=1Gi), whose
	// requests default to its limits: cpu 1.5, memory 3Gi. Labelled with its workload directly.
	b.createPod(newPod(ns, "a").on(nodeName).label(schemas.LabelWorkloadUID, "wl-direct").
		container("cpu=1,memory=2Gi", "").container("", "cpu=500m,memory=1Gi").build())
	// B: a sidecar (cpu=250m,memory=256Mi) started before a regular init container (cpu=4), an app
	// container (cpu=1,memory=1Gi) and, from its RuntimeClass, overhead cpu=100m.
	//   running: app + sidecar = cpu 1.25, memory 1Gi+256Mi
	//   init:    init + sidecars before it = cpu 4.25, memory 256Mi
	//   max per resource = cpu 4.25, memory 1280Mi; plus overhead = cpu 4.35, memory 1280Mi.
	b.createPod(newPod(ns, "b").on(nodeName).initContainer("cpu=250m,memory=256Mi", true).
		initContainer("cpu=4", false).container("cpu=1,memory=1Gi", "").runtimeClass("with-overhead").build())
	// C: bound but still Pending (no kubelet reported yet): it holds its resources. cpu 100m, owned through
	// the ConfigMap chain.
	b.createPod(newPod(ns, "c").on(nodeName).ownedBy("v1", "ConfigMap", middle.Name, string(middle.UID)).
		container("cpu=100m", "").build())
	// D and E: finished pods hold nothing.
	b.setPhase(b.createPod(newPod(ns, "d").on(nodeName).container("cpu=2", "nvidia.com/gpu=2").build()), corev1.PodSucceeded)
	b.setPhase(b.createPod(newPod(ns, "e").on(nodeName).container("cpu=3", "").build()), corev1.PodFailed)
	// F: on another node, not counted here.
	b.createPod(newPod(ns, "f").on("node-elsewhere").container("cpu=7", "").build())

	b.start(nil)

	// Requested: cpu 1.5 + 4.35 + 0.1 = 5.95; memory 3Gi + 1280Mi = 4352Mi; no GPU (D is done).
	wantRequested := resources("cpu=5950m,memory=4352Mi")
	got := b.waitNode(nodeName, "node state with three pods", func(s *schemas.NodeState) bool {
		return s.Pods == 3 && sameQuantities(s.Requested, wantRequested)
	})
	if !sameQuantities(got.Allocatable, resources("cpu=8,memory=32Gi,nvidia.com/gpu=4,pods=110")) {
		t.Errorf("allocatable = %v", got.Allocatable)
	}
	if got.UID != string(node.UID) || got.Cluster != testCluster || !got.Ready || got.Unschedulable {
		t.Errorf("identity or conditions wrong: uid %q cluster %q ready %v unschedulable %v",
			got.UID, got.Cluster, got.Ready, got.Unschedulable)
	}
	if got.Labels["gpu"] != "a100" || len(got.Taints) != 1 || got.Taints[0].Key != "dedicated" {
		t.Errorf("labels %v taints %v", got.Labels, got.Taints)
	}
	if want := map[string]int{"wl-direct": 1, "wl-chain": 1}; fmt.Sprint(got.WorkloadPods) != fmt.Sprint(want) {
		t.Errorf("workload pods = %v, want %v", got.WorkloadPods, want)
	}
	if !sameQuantities(got.WorkloadRequested["wl-direct"], resources("cpu=1500m,memory=3Gi")) ||
		!sameQuantities(got.WorkloadRequested["wl-chain"], resources("cpu=100m")) || len(got.WorkloadRequested) != 2 {
		t.Errorf("workload requested = %v, want wl-direct cpu=1500m,memory=3Gi and wl-chain cpu=100m", got.WorkloadRequested)
	}

	// B finishing frees its 4.35 cpu and 1280Mi: cpu 1.6, memory 3Gi remain.
	b.setPhase(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}}, corev1.PodSucceeded)
	b.waitNode(nodeName, "requested after pod b finished", func(s *schemas.NodeState) bool {
		return s.Pods == 2 && sameQuantities(s.Requested, resources("cpu=1600m,memory=3Gi"))
	})

	// Cordoning is a node fact the placer reads.
	n, err := b.clients.Core.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := b.clients.Core.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b.waitNode(nodeName, "unschedulable node", func(s *schemas.NodeState) bool { return s.Unschedulable })
}

func TestPodBurstOnOneNodeIsCoalesced(t *testing.T) {
	b := newBench(t)
	const ns, nodeName, burst = "burst", "node-burst", 50
	b.namespace(ns)
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=64,memory=256Gi"), ready: true})
	b.start(func(p *producers.ClusterProducer) { p.CoalesceWindow = time.Second })
	b.waitNode(nodeName, "empty node", func(s *schemas.NodeState) bool { return s.Pods == 0 })
	before := len(b.messages(schemas.NodeSubject(testCluster, nodeName)))

	// 50 pod creations, then 50 phase changes to Running (which change nothing the placer reads): 100 pod
	// changes on one node.
	var pods []*corev1.Pod
	for i := range burst {
		pods = append(pods, b.createPod(newPod(ns, fmt.Sprintf("p%02d", i)).on(nodeName).container("cpu=100m", "").build()))
	}
	for _, pod := range pods {
		b.setPhase(pod, corev1.PodRunning)
	}
	// A marker change after the burst: once its state is stored, every burst event is too.
	b.createPod(newPod(ns, "marker").on(nodeName).container("cpu=1", "").build())
	// 50 × 100m + 1 = 6 cpu.
	b.waitNode(nodeName, "state after the burst", func(s *schemas.NodeState) bool {
		return s.Pods == burst+1 && sameQuantities(s.Requested, resources("cpu=6"))
	})
	events := len(b.messages(schemas.NodeSubject(testCluster, nodeName))) - before
	t.Logf("%d pod changes on one node made %d node events", 2*burst+1, events)
	// One event per coalescing window at most, and the burst takes a few windows: far fewer events than
	// the 101 changes.
	if events > 10 {
		t.Errorf("%d pod changes made %d node events, want at most 10", 2*burst+1, events)
	}
}

func TestNodeDeletionPublishesNodeDeleted(t *testing.T) {
	b := newBench(t)
	const nodeName = "node-deleted"
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=4"), ready: false})
	b.start(nil)
	got := b.waitNode(nodeName, "node state", func(*schemas.NodeState) bool { return true })
	if got.Ready {
		t.Error("node without a true Ready condition reported ready")
	}
	if err := b.clients.Core.CoreV1().Nodes().Delete(context.Background(), nodeName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "NodeDeleted", func() bool {
		e, ok := b.last(schemas.NodeSubject(testCluster, nodeName))
		deleted, isDeleted := e.payload.(*schemas.NodeDeleted)
		return ok && isDeleted && deleted.Name == nodeName && deleted.Cluster == testCluster &&
			e.eventType == schemas.TypeNodeDeleted
	})
}

// A node is ready unless its Ready condition says otherwise: one without conditions (a Node object that only
// carries capacity, as no kubelet reports for it) takes pods, as kube-scheduler would place them there.
func TestNodeReadinessFollowsTheReadyCondition(t *testing.T) {
	b := newBench(t)
	tests := []struct {
		node      nodeSpec
		wantReady bool
	}{
		{nodeSpec{name: "node-ready-true", readyCondition: corev1.ConditionTrue}, true},
		{nodeSpec{name: "node-ready-false", readyCondition: corev1.ConditionFalse}, false},
		{nodeSpec{name: "node-ready-unknown", readyCondition: corev1.ConditionUnknown}, false},
		{nodeSpec{name: "node-without-conditions", conditionless: true}, true},
	}
	for _, tt := range tests {
		tt.node.allocatable = resources("cpu=8")
		b.createNode(tt.node)
	}
	b.start(nil)
	for _, tt := range tests {
		got := b.waitNode(tt.node.name, "node state", func(*schemas.NodeState) bool { return true })
		if got.Ready != tt.wantReady {
			t.Errorf("%s: Ready = %v, want %v", tt.node.name, got.Ready, tt.wantReady)
		}
	}
}

// A state that returns to an earlier value within the duplicate window must still be the last one stored:
// its content id equals the earlier message's, which JetStream would drop as a duplicate.
func TestNodeStateReturningToAnEarlierValueIsStored(t *testing.T) {
	b := newBench(t)
	const ns, nodeName = "flipflop", "node-flipflop"
	b.namespace(ns)
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=4"), ready: true})
	b.start(nil)
	b.waitNode(nodeName, "empty node", func(s *schemas.NodeState) bool { return s.Pods == 0 })
	b.createPod(newPod(ns, "p").on(nodeName).container("cpu=1", "").build())
	b.waitNode(nodeName, "one pod", func(s *schemas.NodeState) bool { return s.Pods == 1 })
	b.deletePod(ns, "p")
	b.waitNode(nodeName, "empty node again", func(s *schemas.NodeState) bool { return s.Pods == 0 && len(s.Requested) == 0 })
	msgs := b.messages(schemas.NodeSubject(testCluster, nodeName))
	if first, last := msgs[0], msgs[len(msgs)-1]; first.id == last.id {
		t.Errorf("the repeated state reused id %q", last.id)
	}
}

// A stale state stored by someone else (or left by a producer that died mid-change) is repaired by the
// periodic resync, once the duplicate window of the current state's id has passed.
func TestStateResyncRepairsAStaleLastState(t *testing.T) {
	b := newBenchWith(t, streams.Options{History: time.Hour, DuplicateWindow: 200 * time.Millisecond, Replicas: 1})
	const nodeName = "node-resync"
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=4"), ready: true})
	b.start(func(p *producers.ClusterProducer) { p.StateResync = 500 * time.Millisecond })
	b.waitNode(nodeName, "node state", func(s *schemas.NodeState) bool { return s.Pods == 0 })

	subject := schemas.NodeSubject(testCluster, nodeName)
	stale := &schemas.NodeState{Cluster: testCluster, Name: nodeName, Allocatable: resources("cpu=4"),
		Requested: resources("cpu=3"), Pods: 3, Ready: true}
	event, err := codec.NewEvent(schemas.TypeNodeChanged, "/test", subject, "stale-state", stale)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.pub.Publish(context.Background(), subject, event); err != nil {
		t.Fatal(err)
	}
	if e, _ := b.last(subject); e.id != "stale-state" {
		t.Fatalf("last event %q, want the stale one just published", e.id)
	}
	b.waitNode(nodeName, "the true state back", func(s *schemas.NodeState) bool { return s.Pods == 0 })
}
