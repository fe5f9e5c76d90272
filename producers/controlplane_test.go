package producers_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

// testCRD is a namespaced CRD whose objects keep any field; the first version is the storage version.
func testCRD(group, kind, plural string, versions ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s.%s
spec:
  group: %s
  scope: Namespaced
  names: {kind: %s, listKind: %sList, plural: %s, singular: %s}
  versions:
`, plural, group, group, kind, kind, plural, strings.ToLower(kind))
	for i, v := range versions {
		fmt.Fprintf(&b, `  - name: %s
    served: true
    storage: %t
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, v, i == 0)
	}
	return b.String()
}

// TestControlPlaneWatchFollowsTheServedVersion: with RIs for two versions of one kind, the control-plane
// producer watches the version the control plane serves, and moves to the other when the CRD is replaced by
// one serving only that (as mpi-operator's MPIJob v2beta1 replaces training-operator's v1).
func TestControlPlaneWatchFollowsTheServedVersion(t *testing.T) {
	b := newBench(t)
	const ns = "versions"
	b.namespace(ns)
	v1 := schema.GroupVersionKind{Group: "cp.producers.test", Version: "v1", Kind: "Gizmo"}
	v2 := schema.GroupVersionKind{Group: "cp.producers.test", Version: "v2", Kind: "Gizmo"}
	p := &producers.ControlPlaneProducer{Clients: b.clients, Publisher: b.pub, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	p.AddKind(v1, producers.WorkloadFamily)
	p.AddKind(v2, producers.WorkloadFamily)
	runUntilTestEnds(t, p)
	ctx := t.Context()

	published := func(gvk schema.GroupVersionKind, name string) {
		t.Helper()
		obj := placedObject(gvk, ns, name, "")
		resource := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "gizmos"}
		created, err := b.clients.Dynamic.Resource(resource).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ref := schemas.RefOf(created.Object)
		eventually(t, gvk.Version+" gizmo "+name+" published", func() bool {
			e, ok := b.last(schemas.WorkloadSubject(ref))
			return ok && e.payload.(*schemas.ObjectChanged).Object["apiVersion"] == gvk.GroupVersion().String()
		})
	}

	applyYAML(t, b.clients, testCRD("cp.producers.test", "Gizmo", "gizmos", "v1"))
	published(v1, "first")

	crds := b.clients.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1",
		Resource: "customresourcedefinitions"})
	if err := crds.Delete(ctx, "gizmos.cp.producers.test", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the v1 CRD gone", func() bool {
		_, err := crds.Get(ctx, "gizmos.cp.producers.test", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	applyYAML(t, b.clients, testCRD("cp.producers.test", "Gizmo", "gizmos", "v2"))
	eventually(t, "the v2 CRD served", func() bool {
		_, err := b.clients.Dynamic.Resource(schema.GroupVersionResource{Group: v2.Group, Version: v2.Version, Resource: "gizmos"}).
			Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil
	})
	published(v2, "second")
	gizmosV1 := schema.GroupVersionResource{Group: v1.Group, Version: v1.Version, Resource: "gizmos"}
	if slices.Contains(p.WatchedResources(), gizmosV1) {
		t.Errorf("still watching %s, which is no longer served: watched %v", gizmosV1, p.WatchedResources())
	}
}

// TestControlPlaneWatchOfADeletedCRDIsQuiet: a kind whose CRD is deleted while a policy names it is said once to be
// no longer served, instead of client-go logging "Failed to watch" as an error every 30 s, and its objects are
// published again once the CRD is back; deleted again, it is said gone again.
func TestControlPlaneWatchOfADeletedCRDIsQuiet(t *testing.T) {
	b := newBench(t)
	const ns = "gone"
	b.namespace(ns)
	gvk := schema.GroupVersionKind{Group: "gone.producers.test", Version: "v1", Kind: "Widget"}
	widgets := schema.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: "widgets"}
	var logs, clientGoLogs logbuf.Buffer
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(&clientGoLogs, nil)))
	t.Cleanup(klog.ClearLogger)
	p := &producers.ControlPlaneProducer{Clients: b.clients, Publisher: b.pub, Log: slog.New(slog.NewTextHandler(&logs, nil))}
	p.AddKind(gvk, producers.WorkloadFamily)
	runUntilTestEnds(t, p)
	ctx := t.Context()
	crds := b.clients.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1",
		Resource: "customresourcedefinitions"})
	published := func(name string) {
		t.Helper()
		var created *unstructured.Unstructured
		eventually(t, "widget "+name+" created", func() bool {
			var err error
			created, err = b.clients.Dynamic.Resource(widgets).Namespace(ns).Create(ctx, placedObject(gvk, ns, name, ""), metav1.CreateOptions{})
			return err == nil
		})
		eventually(t, "widget "+name+" published", func() bool {
			_, ok := b.last(schemas.WorkloadSubject(schemas.RefOf(created.Object)))
			return ok
		})
	}

	applyYAML(t, b.clients, testCRD(gvk.Group, gvk.Kind, "widgets", gvk.Version))
	published("first")
	if err := crds.Delete(ctx, "widgets."+gvk.Group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the producer saying the kind is no longer served", func() bool {
		return logs.Contains("kind no longer served")
	})
	if clientGoLogs.Contains("Failed to watch") {
		t.Errorf("client-go logged the watch of the deleted kind as failed:\n%s", clientGoLogs.String())
	}
	applyYAML(t, b.clients, testCRD(gvk.Group, gvk.Kind, "widgets", gvk.Version))
	published("second")
	// Gone again after it was served again, it is said gone again: "once" is per time it goes.
	if n := strings.Count(logs.String(), "kind no longer served"); n != 1 {
		t.Errorf("the kind was said gone %d times while it went once:\n%s", n, logs.String())
	}
	if err := crds.Delete(ctx, "widgets."+gvk.Group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the producer saying again the kind is no longer served", func() bool {
		return strings.Count(logs.String(), "kind no longer served") >= 2
	})
}

// TestControlPlaneProducerPublishesDeletionsMadeWhileItWasDown: an object deleted while no producer ran is
// seen deleted by no informer; once the kind's informer has synced, the producer publishes the deletion of
// every object the streams' state holds as existing that the control plane does not hold, and leaves the
// others alone.
func TestControlPlaneProducerPublishesDeletionsMadeWhileItWasDown(t *testing.T) {
	b := newBench(t)
	ctx := t.Context()
	const ns = "missed-deletions"
	b.namespace(ns)
	kept, err := b.clients.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	configMap := func(name, uid string) *schemas.ObjectChanged {
		return &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns, "uid": uid, "resourceVersion": "1"}}}
	}
	// What an earlier producer published before it stopped; "gone" was deleted while none ran.
	for _, obj := range []*schemas.ObjectChanged{configMap("gone", "uid-gone"), configMap("kept", string(kept.UID))} {
		b.publishToState(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(obj.Ref()), "earlier-"+obj.Ref().Name, obj)
	}

	// "back" was deleted, its deletion published with the usual id moments ago, and the state stream holds it
	// again as existing: what a server stopped uncleanly may recover. Its deletion must be stored again, past
	// JetStream's dedupe of the usual id.
	back := configMap("back", "uid-back")
	b.publishToState(schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(back.Ref()),
		schemas.ObjectDeletedID(producers.WorkloadFamily.Name, back.Ref()), &schemas.ObjectDeleted{Workload: back.Ref()})
	b.publishToState(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(back.Ref()), "recovered-back", back)
	state, err := b.js.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the state stream holding back as existing", func() bool {
		msg, err := state.GetLastMsgForSubject(ctx, schemas.WorkloadSubject(back.Ref()))
		return err == nil && msg.Header.Get(jetstream.MsgIDHeader) == "recovered-back"
	})

	runConfigMapProducer(t, b, nil)
	for _, gone := range []schemas.ObjectRef{configMap("gone", "uid-gone").Ref(), back.Ref()} {
		eventually(t, "the deletion of "+gone.Name+", deleted while no producer ran", func() bool {
			last, ok := b.last(schemas.WorkloadSubject(gone))
			return ok && last.eventType == schemas.TypeWorkloadDeleted
		})
	}
	for _, e := range b.messages(schemas.WorkloadSubject(configMap("kept", "").Ref())) {
		if e.eventType == schemas.TypeWorkloadDeleted {
			t.Errorf("the ConfigMap that is there was published deleted: %+v", e)
		}
	}
}

// TestControlPlaneProducerSkipsNamespaces: workloads in a skipped namespace (the control plane's own) are not
// published, one the streams hold from before its namespace was skipped is published deleted, and the other
// namespaces' workloads are published as ever.
func TestControlPlaneProducerSkipsNamespaces(t *testing.T) {
	b := newBench(t)
	ctx := t.Context()
	const skippedNS, ns = "kube-skipped", "team-skip"
	b.namespace(skippedNS)
	b.namespace(ns)
	create := func(namespace, name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := b.clients.Core.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	ref := func(cm *corev1.ConfigMap) schemas.ObjectRef {
		return schemas.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name, UID: string(cm.UID)}
	}
	earlier := create(skippedNS, "earlier")
	// What a producer that did not skip the namespace published.
	b.publishToState(schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref(earlier)), "earlier", &schemas.ObjectChanged{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": earlier.Name, "namespace": skippedNS,
			"uid": string(earlier.UID), "resourceVersion": earlier.ResourceVersion}}})

	skipped, err := app.SkippedNamespaces([]string{"kube-.*"})
	if err != nil {
		t.Fatal(err)
	}
	runConfigMapProducer(t, b, skipped)
	later := create(skippedNS, "later")
	placed := create(ns, "placed")
	eventually(t, "the workload of an unskipped namespace published", func() bool {
		_, ok := b.last(schemas.WorkloadSubject(ref(placed)))
		return ok
	})
	eventually(t, "the workload held from before its namespace was skipped published deleted", func() bool {
		last, ok := b.last(schemas.WorkloadSubject(ref(earlier)))
		return ok && last.eventType == schemas.TypeWorkloadDeleted
	})
	if msgs := b.messages(schemas.WorkloadSubject(ref(later))); len(msgs) != 0 {
		t.Errorf("a workload of the skipped namespace was published: %+v", msgs)
	}
}

// runConfigMapProducer runs a control-plane producer that publishes ConfigMaps as workloads, skipping the
// namespaces skipped matches, until the test ends.
func runConfigMapProducer(t *testing.T, b *bench, skipped *regexp.Regexp) {
	t.Helper()
	p := &producers.ControlPlaneProducer{Clients: b.clients, Publisher: b.pub, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Known: app.KnownObjects(b.js), SkippedNamespaces: skipped}
	p.AddKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, producers.WorkloadFamily)
	runUntilTestEnds(t, p)
}

// runUntilTestEnds runs p until the test ends, failing the test if it ends with an error.
func runUntilTestEnds(t *testing.T, p *producers.ControlPlaneProducer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("producer ended with %v", err)
		}
	})
}

// TestControlPlaneProducerStartingBesideAReplicaKeepsWhatItsWatchHasNotSeenYet: a producer that starts while
// another replica runs reads what the state stream holds once its informer has synced. An object created
// after the informer listed, which the other replica has published already, is then in the state stream but
// not yet in the informer's cache (its watch event is on the way): it is there, not deleted while no producer
// ran. Published deleted, its copies went, and its change, when the watch delivered it, was dropped as the
// other replica's duplicate, so the placer held it deleted for good.
func TestControlPlaneProducerStartingBesideAReplicaKeepsWhatItsWatchHasNotSeenYet(t *testing.T) {
	b := newBench(t)
	// Whether an object's watch event beats the producer's look at its cache is a race: several objects,
	// created at once as the state stream is read, in several starts.
	const starts, raced = 3, 10
	known := app.KnownObjects(b.js)
	for start := range starts {
		ns := fmt.Sprintf("replica-start-%d", start)
		b.namespace(ns)
		p := &producers.ControlPlaneProducer{Clients: b.clients, Publisher: b.pub, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Known: func(ctx context.Context, filter string) ([]producers.KnownObject, error) {
				objects, err := known(ctx, filter)
				if err != nil {
					return nil, err
				}
				// Created after the informer listed, and published by the other replica.
				created := make([]producers.KnownObject, raced)
				errs := make([]error, raced)
				var wg sync.WaitGroup
				for i := range raced {
					wg.Go(func() {
						cm, err := b.clients.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
							Name: fmt.Sprintf("raced-%d", i)}}, metav1.CreateOptions{})
						if err != nil {
							errs[i] = err
							return
						}
						created[i] = producers.KnownObject{Ref: schemas.ObjectRef{APIVersion: "v1", Kind: "ConfigMap",
							Namespace: ns, Name: cm.Name, UID: string(cm.UID)}, ResourceVersion: cm.ResourceVersion}
					})
				}
				wg.Wait()
				return append(objects, created...), errors.Join(errs...)
			}}
		p.AddKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, producers.WorkloadFamily)
		runUntilTestEnds(t, p)
		for i := range raced {
			subject := schemas.WorkloadSubject(schemas.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns,
				Name: fmt.Sprintf("raced-%d", i)})
			eventually(t, "the ConfigMap created during the start published", func() bool {
				last, ok := b.last(subject)
				return ok && last.eventType == schemas.TypeWorkloadChanged
			})
			for _, e := range b.messages(subject) {
				if e.eventType == schemas.TypeWorkloadDeleted {
					t.Errorf("%s/raced-%d, which is there, was published deleted: %+v", ns, i, e)
				}
			}
		}
	}
}
