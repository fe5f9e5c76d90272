package producers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

const trainerCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: trainers.status.producers.test
spec:
  group: status.producers.test
  scope: Namespaced
  names: {kind: Trainer, listKind: TrainerList, plural: trainers, singular: trainer}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: servers.status.producers.test
spec:
  group: status.producers.test
  scope: Namespaced
  names: {kind: Server, listKind: ServerList, plural: servers, singular: server}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

var (
	trainerGVK = schema.GroupVersionKind{Group: "status.producers.test", Version: "v1", Kind: "Trainer"}
	trainerGVR = schema.GroupVersionResource{Group: "status.producers.test", Version: "v1", Resource: "trainers"}
	serverGVK  = schema.GroupVersionKind{Group: "status.producers.test", Version: "v1", Kind: "Server"}
	serverGVR  = schema.GroupVersionResource{Group: "status.producers.test", Version: "v1", Resource: "servers"}
)

// placedObject builds a CR as the applier leaves it in a workload cluster; an empty workloadUID leaves
// the fleetflow labels off.
func placedObject(gvk schema.GroupVersionKind, namespace, name, workloadUID string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(namespace)
	u.SetName(name)
	if workloadUID != "" {
		u.SetLabels(map[string]string{schemas.LabelManagedBy: schemas.ManagedByFleetflow, schemas.LabelWorkloadUID: workloadUID})
	}
	u.Object["spec"] = map[string]any{"replicas": int64(3)}
	return u
}

func TestPlacedWorkloadStatusAndPendingPods(t *testing.T) {
	b := newBench(t)
	const ns = "status"
	b.namespace(ns)
	// The kind is named before its CRD exists: the watch starts when the cluster begins serving it.
	p, _ := b.start(func(p *producers.ClusterProducer) {
		p.Kinds = []schema.GroupVersionKind{trainerGVK}
		p.APIsResync = time.Hour
	})
	applyYAML(t, b.clients, trainerCRD)
	eventually(t, "Trainer watched", func() bool { return slices.Contains(p.WatchedKinds(), trainerGVK) })

	ctx := context.Background()
	trainers := b.clients.Dynamic.Resource(trainerGVR).Namespace(ns)
	placed, err := trainers.Create(ctx, placedObject(trainerGVK, ns, "llama", "cp-uid-llama"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Not placed by fleetflow: never reported.
	if _, err := trainers.Create(ctx, placedObject(trainerGVK, ns, "handmade", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The framework's controller would make these: two pods waiting for a node (one owned by the CR, one
	// labelled with the workload) and one already bound, which is not pending.
	owned := b.createPod(newPod(ns, "llama-0").ownedBy("status.producers.test/v1", "Trainer", "llama", string(placed.GetUID())).build())
	b.createPod(newPod(ns, "llama-1").label(schemas.LabelWorkloadUID, "cp-uid-llama").build())
	b.createPod(newPod(ns, "llama-2").on("some-node").ownedBy("status.producers.test/v1", "Trainer", "llama", string(placed.GetUID())).build())
	b.createPod(newPod(ns, "other").build()) // pending, but of no workload

	// The framework's controller reports status.
	placed.Object["status"] = map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Created", "status": "True"}}}
	if _, err := trainers.UpdateStatus(ctx, placed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	ref := schemas.ObjectRef{APIVersion: "status.producers.test/v1", Kind: "Trainer", Namespace: ns, Name: "llama", UID: "cp-uid-llama"}
	subject := schemas.WorkloadStatusSubject(testCluster, ref)
	var got *schemas.WorkloadStatus
	waitStatus := func(what string, cond func(*schemas.WorkloadStatus) bool) {
		t.Helper()
		eventually(t, what, func() bool {
			e, ok := b.last(subject)
			if !ok {
				return false
			}
			got = e.payload.(*schemas.WorkloadStatus)
			return cond(got)
		})
	}
	waitStatus("status Running with two pending pods", func(s *schemas.WorkloadStatus) bool {
		return s.Status["phase"] == "Running" && s.PendingPods == 2
	})
	if got.Workload != ref || got.Cluster != testCluster || got.Gone {
		t.Errorf("status identity %+v cluster %q gone %v, want %+v", got.Workload, got.Cluster, got.Gone, ref)
	}
	if conds, _ := got.Status["conditions"].([]any); len(conds) != 1 {
		t.Errorf("status not copied verbatim: %v", got.Status)
	}
	// The oldest pending pod is llama-0, created first (creation times have one-second resolution).
	if got.PendingSince == nil || !got.PendingSince.Equal(owned.CreationTimestamp.UTC()) {
		t.Errorf("pendingSince = %v, want %v", got.PendingSince, owned.CreationTimestamp.UTC())
	}

	// The scheduler binds llama-0: one pod still waits.
	err = b.clients.Core.CoreV1().Pods(ns).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "llama-0"},
		Target:     corev1.ObjectReference{Kind: "Node", Name: "some-node"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus("one pending pod after binding", func(s *schemas.WorkloadStatus) bool { return s.PendingPods == 1 })

	// A kind added while running.
	p.AddKind(serverGVK)
	eventually(t, "Server watched", func() bool { return slices.Contains(p.WatchedKinds(), serverGVK) })
	server := placedObject(serverGVK, ns, "vllm", "cp-uid-vllm")
	if _, err := b.clients.Dynamic.Resource(serverGVR).Namespace(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	serverRef := schemas.ObjectRef{APIVersion: "status.producers.test/v1", Kind: "Server", Namespace: ns, Name: "vllm", UID: "cp-uid-vllm"}
	eventually(t, "status of the Server", func() bool {
		_, ok := b.last(schemas.WorkloadStatusSubject(testCluster, serverRef))
		return ok
	})

	// Deleting the placed object reports it gone.
	if err := trainers.Delete(ctx, "llama", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus("gone", func(s *schemas.WorkloadStatus) bool { return s.Gone })
	if got.Workload != ref {
		t.Errorf("gone status for %+v, want %+v", got.Workload, ref)
	}
	if got.Status["phase"] != "Running" {
		t.Errorf("gone status carries status %v, want the copy's last one (phase Running)", got.Status)
	}

	handmade := schemas.ObjectRef{APIVersion: "status.producers.test/v1", Kind: "Trainer", Namespace: ns, Name: "handmade"}
	if n := len(b.messages(schemas.WorkloadStatusSubject(testCluster, handmade))); n != 0 {
		t.Errorf("%d status events for an object fleetflow did not place", n)
	}
}

// TestOneWatchPerKindAcrossServedVersions: a CRD serving two versions that both have RIs is watched in one
// of them only, also after later calls that re-check the watches, so each placed object reports once.
func TestOneWatchPerKindAcrossServedVersions(t *testing.T) {
	b := newBench(t)
	v1 := schema.GroupVersionKind{Group: "status.producers.test", Version: "v1", Kind: "Gadget"}
	v1beta1 := schema.GroupVersionKind{Group: "status.producers.test", Version: "v1beta1", Kind: "Gadget"}
	p, _ := b.start(func(p *producers.ClusterProducer) {
		p.Kinds = []schema.GroupVersionKind{v1beta1, v1}
		p.APIsResync = time.Hour
	})
	applyYAML(t, b.clients, testCRD("status.producers.test", "Gadget", "gadgets", "v1", "v1beta1"))
	gadgets := func() []schema.GroupVersionKind {
		var out []schema.GroupVersionKind
		for _, k := range p.WatchedKinds() {
			if k.GroupKind() == v1.GroupKind() {
				out = append(out, k)
			}
		}
		return out
	}
	eventually(t, "Gadget watched", func() bool { return len(gadgets()) > 0 })
	// Adding a kind re-checks every watch.
	p.AddKind(trainerGVK)
	applyYAML(t, b.clients, trainerCRD)
	eventually(t, "Trainer watched", func() bool { return slices.Contains(p.WatchedKinds(), trainerGVK) })
	if got := gadgets(); len(got) != 1 || got[0] != v1 {
		t.Fatalf("Gadget watched as %v, want once, as v1 (the first wanted version in order)", got)
	}
}

// TestCopiesDeletedWhileNoProducerRanArePublishedGone: a copy deleted while no cluster producer ran is seen
// deleted by no informer; once the watch of its kind has synced, the producer publishes it gone, with the
// last status the streams hold of it, and leaves alone the copies that are there, those already gone, and
// those of kinds it does not watch.
func TestCopiesDeletedWhileNoProducerRanArePublishedGone(t *testing.T) {
	b := newBench(t)
	const ns = "missed"
	b.namespace(ns)
	applyYAML(t, b.clients, trainerCRD)
	ctx := context.Background()
	trainers := b.clients.Dynamic.Resource(trainerGVR).Namespace(ns)
	if _, err := trainers.Create(ctx, placedObject(trainerGVK, ns, "kept", "uid-kept"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := func(kind, name string) schemas.ObjectRef {
		return schemas.ObjectRef{APIVersion: "status.producers.test/v1", Kind: kind, Namespace: ns, Name: name, UID: "uid-" + name}
	}
	running := map[string]any{"phase": "Running"}
	earlier := []*schemas.WorkloadStatus{ // what an earlier producer published before it stopped
		{Workload: ref("Trainer", "kept"), Status: running},
		{Workload: ref("Trainer", "deleted"), Status: running},
		{Workload: ref("Trainer", "gone-before"), Gone: true},
		{Workload: ref("Server", "unwatched"), Status: running},
	}
	for _, st := range earlier {
		st.Cluster = testCluster
		b.publishToState(schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(testCluster, st.Workload), "earlier-"+st.Workload.Name, st)
	}

	b.start(func(p *producers.ClusterProducer) {
		p.Kinds = []schema.GroupVersionKind{trainerGVK}
		p.KnownPlaced = app.KnownPlaced(b.js, testCluster)
	})
	deleted := schemas.WorkloadStatusSubject(testCluster, ref("Trainer", "deleted"))
	eventually(t, "the copy deleted meanwhile published gone", func() bool {
		last, ok := b.last(deleted)
		return ok && last.payload.(*schemas.WorkloadStatus).Gone
	})
	last, _ := b.last(deleted)
	if got := last.payload.(*schemas.WorkloadStatus); got.Workload != ref("Trainer", "deleted") || got.Status["phase"] != "Running" {
		t.Errorf("gone event %+v, want the deleted copy with its last status (phase Running)", got)
	}
	kept := schemas.WorkloadStatusSubject(testCluster, ref("Trainer", "kept"))
	eventually(t, "the copy that is there published as it is", func() bool {
		last, ok := b.last(kept)
		return ok && last.id != "earlier-kept"
	})
	for _, st := range earlier {
		if st.Workload.Name == "deleted" {
			continue
		}
		msgs := b.messages(schemas.WorkloadStatusSubject(testCluster, st.Workload))
		for _, m := range msgs[1:] {
			if m.payload.(*schemas.WorkloadStatus).Gone {
				t.Errorf("%s published gone again: %+v", st.Workload.Name, m.payload)
			}
		}
	}
}

// TestKindsNamedWithoutAVersionAreWatched: a kind a SchedulePolicy selects, named by group and kind only (a
// Duplicate ConfigMap), is watched in the version the cluster serves, so its placed copy deleted in the cluster
// is published gone and the placer applies it again.
func TestKindsNamedWithoutAVersionAreWatched(t *testing.T) {
	b := newBench(t)
	const ns = "groupkinds"
	b.namespace(ns)
	p, _ := b.start(func(p *producers.ClusterProducer) { p.APIsResync = time.Hour })
	configMap := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	p.AddGroupKind(configMap.GroupKind())
	eventually(t, "ConfigMap watched", func() bool { return slices.Contains(p.WatchedKinds(), configMap) })

	ctx := context.Background()
	configMaps := b.clients.Dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	copied := placedObject(configMap, ns, "settings", "cp-uid-settings")
	delete(copied.Object, "spec")
	if _, err := configMaps.Create(ctx, copied, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := schemas.ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings", UID: "cp-uid-settings"}
	subject := schemas.WorkloadStatusSubject(testCluster, ref)
	eventually(t, "the copy reported", func() bool { _, ok := b.last(subject); return ok })
	if err := configMaps.Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy reported gone", func() bool {
		e, ok := b.last(subject)
		return ok && e.payload.(*schemas.WorkloadStatus).Gone
	})
}

// TestClusterProducerStartingBesideAReplicaKeepsCopiesItsWatchHasNotSeenYet: a cluster producer that starts
// while another replica runs compares its synced cache with what the state stream holds. A copy applied after
// its informer listed, whose status the other replica has published, is not in the cache yet (its watch event
// is on the way): it is there, not deleted while no producer ran, and must not be published gone.
func TestClusterProducerStartingBesideAReplicaKeepsCopiesItsWatchHasNotSeenYet(t *testing.T) {
	b := newBench(t)
	applyYAML(t, b.clients, trainerCRD)
	// Whether a copy's watch event beats the producer's look at its cache is a race: several copies, applied
	// at once as the state stream is read, in several starts.
	const starts, raced = 3, 10
	for start := range starts {
		ns := fmt.Sprintf("replica-start-%d", start)
		b.namespace(ns)
		known := app.KnownPlaced(b.js, testCluster)
		b.start(func(p *producers.ClusterProducer) {
			p.Kinds = []schema.GroupVersionKind{trainerGVK}
			p.KnownPlaced = func(ctx context.Context) ([]schemas.WorkloadStatus, error) {
				statuses, err := known(ctx)
				if err != nil {
					return nil, err
				}
				// Applied after the informer listed, and reported by the other replica.
				created := make([]schemas.WorkloadStatus, raced)
				errs := make([]error, raced)
				var wg sync.WaitGroup
				for i := range raced {
					wg.Go(func() {
						name := fmt.Sprintf("raced-%d", i)
						_, err := b.clients.Dynamic.Resource(trainerGVR).Namespace(ns).Create(ctx,
							placedObject(trainerGVK, ns, name, "uid-"+name), metav1.CreateOptions{})
						errs[i] = err
						created[i] = schemas.WorkloadStatus{Cluster: testCluster, Status: map[string]any{"phase": "Running"},
							Workload: schemas.ObjectRef{APIVersion: trainerGVK.GroupVersion().String(), Kind: trainerGVK.Kind,
								Namespace: ns, Name: name, UID: "uid-" + name}}
					})
				}
				wg.Wait()
				return append(statuses, created...), errors.Join(errs...)
			}
		})
		for i := range raced {
			name := fmt.Sprintf("raced-%d", i)
			subject := schemas.WorkloadStatusSubject(testCluster, schemas.ObjectRef{APIVersion: trainerGVK.GroupVersion().String(),
				Kind: trainerGVK.Kind, Namespace: ns, Name: name, UID: "uid-" + name})
			eventually(t, "the copy applied during the start reported", func() bool {
				last, ok := b.last(subject)
				return ok && !last.payload.(*schemas.WorkloadStatus).Gone
			})
			for _, m := range b.messages(subject) {
				if m.payload.(*schemas.WorkloadStatus).Gone {
					t.Errorf("%s/%s, which is there, was published gone", ns, name)
				}
			}
		}
	}
}

// TestKindOfACRDInstalledRightAfterAnotherRefreshIsWatchedAtOnce: discovery is refreshed at most once per two
// seconds on a CRD's event, so a CRD installed right after another one (a Duplicate policy copying a framework's
// CRDs) found the mapper's cache without its kind: the producer warned that it could not watch the placed
// objects of a kind its own discovery had just listed, until the next discovery. A discovery that finds new
// kinds now invalidates the cache first.
func TestKindOfACRDInstalledRightAfterAnotherRefreshIsWatchedAtOnce(t *testing.T) {
	b := newBench(t)
	p, logs := b.start(func(p *producers.ClusterProducer) { p.APIsResync = time.Hour })
	widget := schema.GroupKind{Group: "apis.producers.test", Kind: "Widget"}
	p.AddGroupKind(widget)
	eventually(t, "installed APIs at start", func() bool { _, ok := b.last(schemas.ClusterAPIsSubject(testCluster)); return ok })

	// Another CRD's refresh just now leaves the cache warm, without the kind installed next.
	b.clients.RefreshMapper()
	if _, err := b.clients.Mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Fatal(err)
	}
	applyYAML(t, b.clients, widgetCRD)
	eventually(t, "Widget watched", func() bool {
		return slices.ContainsFunc(p.WatchedKinds(), func(gvk schema.GroupVersionKind) bool { return gvk.GroupKind() == widget })
	})
	if logs.Contains("cannot watch placed objects of kind") {
		t.Errorf("the producer warned before it watched Widget:\n%s", logs)
	}
}
