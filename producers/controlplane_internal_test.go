package producers

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestDeletionOfANameTakenAgainIsPublishedFirst: a workload deleted and created again under its name before
// the producer handled the name publishes the first one's deletion, then the new one's change, instead of
// the change alone, which consumers would take for a new version of the first.
func TestDeletionOfANameTakenAgainIsPublishedFirst(t *testing.T) {
	ctx := t.Context()
	js := bustest.JetStream(t)
	log := slog.New(slog.DiscardHandler)
	job := func(uid string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
			"metadata": map[string]any{"name": "train", "namespace": "team", "uid": uid, "resourceVersion": uid + "-1"}}}
	}
	ik := informerKey{gvr: schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}, family: WorkloadFamily.Name}
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	p := &ControlPlaneProducer{Publisher: bus.NewPublisher(js), Log: log,
		informers: map[informerKey]watched{ik: {informer: informer, family: WorkloadFamily}}, tombstones: map[objectKey]tombstone{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[objectKey]())}
	defer p.queue.ShutDown()

	first, second := job("uid-1"), job("uid-2")
	p.enqueueDeleted(ik, first)
	if err := informer.GetStore().Add(second); err != nil {
		t.Fatal(err)
	}
	p.enqueue(ik, second)
	key := objectKey{informerKey: ik, namespace: "team", name: "train"}
	if err := p.publish(ctx, key); err != nil {
		t.Fatal(err)
	}

	events, err := js.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for seq := uint64(1); ; seq++ {
		msg, err := events.GetMsg(ctx, seq)
		if err != nil {
			break
		}
		event, err := bus.Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := codec.DecodePayload(event)
		if err != nil {
			t.Fatal(err)
		}
		uid := ""
		switch pl := payload.(type) {
		case *schemas.ObjectDeleted:
			uid = pl.Workload.UID
		case *schemas.ObjectChanged:
			uid = pl.Ref().UID
		}
		got = append(got, event.Type()+" "+uid)
	}
	want := []string{schemas.TypeWorkloadDeleted + " uid-1", schemas.TypeWorkloadChanged + " uid-2"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("published %v, want %v", got, want)
	}
	if _, kept := p.tombstones[key]; kept {
		t.Error("the published deletion is still kept")
	}
}

// TestKindNamedByPoliciesIsWaitedForOnce: every publish of a policy naming a kind no CRD serves (a typo) asks
// to watch it; one goroutine waits for it, not one per publish.
func TestKindNamedByPoliciesIsWaitedForOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	clients, err := kube.NewClients(localfleettest.Fleet(t).Workloads[0].RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	p := &ControlPlaneProducer{Clients: clients, ctx: ctx}
	// Counted as the goroutines this one starts through a WaitGroup, not by runtime.NumGoroutine: client-go
	// starts goroutines of its own meanwhile.
	before := startedHere()
	for range 20 {
		p.addGroupKind(schema.GroupKind{Group: "example.com", Kind: "Typo"})
	}
	if waiting := startedHere() - before; waiting != 1 {
		t.Errorf("%d goroutines wait for one kind, want 1", waiting)
	}
	cancel()
	p.wg.Wait()
}

// startedHere counts the live goroutines the calling goroutine started with sync.WaitGroup.Go, running or not
// yet (a goroutine not yet run shows only its creator).
func startedHere() int {
	self := make([]byte, 64)
	self = self[:runtime.Stack(self, false)]
	id := strings.Fields(string(self))[1] // "goroutine 123 [running]:"
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "created by sync.(*WaitGroup).Go in goroutine "+id+"\n")
}
