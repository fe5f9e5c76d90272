package producers_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// testCluster is the one workload cluster of the package's fleet.
const testCluster = "c1"

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithClusters(testCluster)))
}

// bench is what a cluster-producer test works with: the fleet's workload cluster and its own JetStream.
type bench struct {
	t       *testing.T
	clients *kube.Clients
	js      jetstream.JetStream
	pub     *bus.Publisher
	stream  jetstream.Stream
}

func newBench(t *testing.T) *bench {
	t.Helper()
	return newBenchWith(t, streams.DefaultOptions())
}

func newBenchWith(t *testing.T, opts streams.Options) *bench {
	t.Helper()
	fleet := localfleettest.Fleet(t)
	clients, err := kube.NewClients(fleet.Workloads[0].RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, js, err := bus.Connect(srv.ClientURL(), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := bus.ProvisionStreams(context.Background(), js, opts, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(context.Background(), schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	return &bench{t: t, clients: clients, js: js, pub: bus.NewPublisher(js), stream: stream}
}

// start runs a producer for the test cluster until the test ends; adjust sets its options. The returned
// log holds the producer's debug log.
func (b *bench) start(adjust func(*producers.ClusterProducer)) (*producers.ClusterProducer, *logbuf.Buffer) {
	b.t.Helper()
	logs := &logbuf.Buffer{}
	p := &producers.ClusterProducer{
		Cluster:        testCluster,
		Clients:        b.clients,
		Publisher:      b.pub,
		Log:            slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Heartbeat:      time.Second,
		CoalesceWindow: 200 * time.Millisecond,
	}
	if adjust != nil {
		adjust(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	b.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.t.Errorf("producer Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			b.t.Error("producer did not stop within 30s of cancel")
		}
		if b.t.Failed() {
			b.t.Logf("producer log:\n%s", logs.String())
		}
	})
	return p, logs
}

// run runs a producer for the test cluster until stop is called, for a test that stops and starts it again.
func (b *bench) run() (stop func()) {
	p := &producers.ClusterProducer{Cluster: testCluster, Clients: b.clients, Publisher: b.pub,
		Log: slog.New(slog.DiscardHandler), Heartbeat: time.Second, CoalesceWindow: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.t.Errorf("producer Run: %v", err)
		}
	}
}

// publishToState publishes an event on a subject nothing was published on, as an earlier producer would
// have, and waits until the state stream holds it.
func (b *bench) publishToState(eventType, subject, id string, payload schemas.Payload) {
	b.t.Helper()
	event, err := codec.NewEvent(eventType, "/test", subject, id, payload)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.pub.Publish(context.Background(), subject, event); err != nil {
		b.t.Fatal(err)
	}
	state, err := b.js.Stream(context.Background(), schemas.StreamState)
	if err != nil {
		b.t.Fatal(err)
	}
	eventually(b.t, "the state stream holding "+subject, func() bool {
		_, err := state.GetLastMsgForSubject(context.Background(), subject)
		return err == nil
	})
}

// messages returns the stored events on subject, oldest first.
func (b *bench) messages(subject string) []storedEvent {
	b.t.Helper()
	var out []storedEvent
	for seq := uint64(1); ; {
		msg, err := b.stream.GetMsg(context.Background(), seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			b.t.Fatalf("read %s: %v", subject, err)
		}
		event, err := bus.Decode(msg.Header, msg.Data)
		if err != nil {
			b.t.Fatalf("decode message %d on %s: %v", msg.Sequence, subject, err)
		}
		payload, err := codec.DecodePayload(event)
		if err != nil {
			b.t.Fatalf("payload of message %d on %s: %v", msg.Sequence, subject, err)
		}
		out = append(out, storedEvent{seq: msg.Sequence, id: event.ID(), eventType: event.Type(), payload: payload})
		seq = msg.Sequence + 1
	}
}

// last returns the newest stored event on subject, if any.
func (b *bench) last(subject string) (storedEvent, bool) {
	msgs := b.messages(subject)
	if len(msgs) == 0 {
		return storedEvent{}, false
	}
	return msgs[len(msgs)-1], true
}

type storedEvent struct {
	seq       uint64
	id        string
	eventType string
	payload   schemas.Payload
}

// lastNode waits until the newest event on node's subject satisfies cond and returns it.
func (b *bench) waitNode(node, what string, cond func(*schemas.NodeState) bool) *schemas.NodeState {
	b.t.Helper()
	var got *schemas.NodeState
	eventually(b.t, what, func() bool {
		e, ok := b.last(schemas.NodeSubject(testCluster, node))
		if !ok {
			return false
		}
		got, _ = e.payload.(*schemas.NodeState)
		return got != nil && cond(got)
	})
	return got
}

// eventually polls cond until it holds, failing the test after a minute.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Fixtures. No kubelet or scheduler runs in the fleet, so tests create Nodes and bound Pods themselves and
// set their status as a kubelet would.

type nodeSpec struct {
	name        string
	labels      map[string]string
	taints      []corev1.Taint
	allocatable corev1.ResourceList
	ready       bool
	// readyCondition, when set, is the Ready condition's status instead of ready's; conditionless leaves the
	// node without conditions, as a Node object that no kubelet reports for.
	readyCondition corev1.ConditionStatus
	conditionless  bool
}

func (b *bench) createNode(spec nodeSpec) *corev1.Node {
	b.t.Helper()
	ctx := context.Background()
	nodes := b.clients.Core.CoreV1().Nodes()
	node, err := nodes.Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: spec.name, Labels: spec.labels},
		Spec:       corev1.NodeSpec{Taints: spec.taints},
	}, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatalf("create node %s: %v", spec.name, err)
	}
	b.t.Cleanup(func() {
		err := nodes.Delete(context.Background(), spec.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			b.t.Errorf("delete node %s: %v", spec.name, err)
		}
	})
	status := corev1.ConditionFalse
	if spec.ready {
		status = corev1.ConditionTrue
	}
	if spec.readyCondition != "" {
		status = spec.readyCondition
	}
	node.Status.Capacity = spec.allocatable
	node.Status.Allocatable = spec.allocatable
	if !spec.conditionless {
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	}
	node, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil {
		b.t.Fatalf("node %s status: %v", spec.name, err)
	}
	return node
}

// runtimeClassWithOverhead creates a RuntimeClass whose pods carry overhead.
func (b *bench) runtimeClassWithOverhead(name, overhead string) {
	b.t.Helper()
	classes := b.clients.Core.NodeV1().RuntimeClasses()
	_, err := classes.Create(context.Background(), &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Handler:    "test",
		Overhead:   &nodev1.Overhead{PodFixed: resources(overhead)},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		b.t.Fatalf("create RuntimeClass %s: %v", name, err)
	}
	b.t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

func (b *bench) namespace(name string) {
	b.t.Helper()
	if err := b.clients.EnsureNamespace(context.Background(), name, "producers-test", nil); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bench) createPod(pod *corev1.Pod) *corev1.Pod {
	b.t.Helper()
	created, err := b.clients.Core.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatalf("create pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	b.t.Cleanup(func() { b.deletePod(created.Namespace, created.Name) })
	return created
}

// deletePod deletes at once: without a kubelet, a graceful delete of a bound pod would never finish.
func (b *bench) deletePod(namespace, name string) {
	b.t.Helper()
	err := b.clients.Core.CoreV1().Pods(namespace).Delete(context.Background(), name,
		metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		b.t.Errorf("delete pod %s/%s: %v", namespace, name, err)
	}
}

func (b *bench) setPhase(pod *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	b.t.Helper()
	pods := b.clients.Core.CoreV1().Pods(pod.Namespace)
	for {
		current, err := pods.Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			b.t.Fatalf("get pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		current.Status.Phase = phase
		updated, err := pods.UpdateStatus(context.Background(), current, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			b.t.Fatalf("set phase of pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
		return updated
	}
}

// podBuilder builds test pods.
type podBuilder struct{ pod *corev1.Pod }

func newPod(namespace, name string) *podBuilder {
	return &podBuilder{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

func (pb *podBuilder) on(node string) *podBuilder { pb.pod.Spec.NodeName = node; return pb }

func (pb *podBuilder) label(key, value string) *podBuilder {
	if pb.pod.Labels == nil {
		pb.pod.Labels = map[string]string{}
	}
	pb.pod.Labels[key] = value
	return pb
}

func (pb *podBuilder) ownedBy(apiVersion, kind, name string, uid string) *podBuilder {
	pb.pod.OwnerReferences = append(pb.pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: new(true)})
	return pb
}

// container adds an app container; requests and limits are "name=quantity" lists like "cpu=1,memory=2Gi".
func (pb *podBuilder) container(requests, limits string) *podBuilder {
	pb.pod.Spec.Containers = append(pb.pod.Spec.Containers, testContainer(len(pb.pod.Spec.Containers), "app", requests, limits))
	return pb
}

func (pb *podBuilder) initContainer(requests string, sidecar bool) *podBuilder {
	c := testContainer(len(pb.pod.Spec.InitContainers), "init", requests, "")
	if sidecar {
		c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	}
	pb.pod.Spec.InitContainers = append(pb.pod.Spec.InitContainers, c)
	return pb
}

// runtimeClass sets the pod's RuntimeClass; the RuntimeClass admission plugin copies its overhead.
func (pb *podBuilder) runtimeClass(name string) *podBuilder {
	pb.pod.Spec.RuntimeClassName = &name
	return pb
}

func (pb *podBuilder) build() *corev1.Pod {
	if len(pb.pod.Spec.Containers) == 0 {
		pb.container("", "")
	}
	return pb.pod
}

func testContainer(i int, prefix, requests, limits string) corev1.Container {
	return corev1.Container{
		Name:      prefix + "-" + string(rune('a'+i)),
		Image:     "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: resources(requests), Limits: resources(limits)},
	}
}

func resources(list string) corev1.ResourceList {
	if list == "" {
		return nil
	}
	out := corev1.ResourceList{}
	for item := range strings.SplitSeq(list, ",") {
		name, value, _ := strings.Cut(item, "=")
		out[corev1.ResourceName(name)] = resource.MustParse(value)
	}
	return out
}

// sameQuantities compares resource lists by amount, ignoring zero entries and formatting.
func sameQuantities(got, want corev1.ResourceList) bool {
	for name, q := range want {
		g := got[name]
		if g.Cmp(q) != 0 {
			return false
		}
	}
	for name, q := range got {
		if _, ok := want[name]; !ok && !q.IsZero() {
			return false
		}
	}
	return true
}
