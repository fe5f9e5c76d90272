package producers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// Family says how objects of one kind are published: their event types and subject.
type Family struct {
	// Name prefixes dedupe ids ("workload", "policy", ...).
	Name        string
	ChangedType string
	DeletedType string
	Subject     func(schemas.ObjectRef) string
	// Relevant reports whether an update is worth an event; nil means any change outside status and
	// bookkeeping metadata.
	Relevant func(oldObj, newObj *unstructured.Unstructured) bool
}

// Families of the control plane.
var (
	WorkloadFamily = Family{Name: "workload", ChangedType: schemas.TypeWorkloadChanged,
		DeletedType: schemas.TypeWorkloadDeleted, Subject: schemas.WorkloadSubject}
	PolicyFamily = Family{Name: "policy", ChangedType: schemas.TypePolicyChanged,
		DeletedType: schemas.TypePolicyDeleted, Subject: schemas.PolicySubject}
	// An RI's exclusive-topology expression is an annotation of the prefix that otherwise marks fleetflow's
	// bookkeeping, which a copy leaves out and which is no change: a change of it alone is one.
	ResourceInterfaceFamily = Family{Name: "resourceinterface", ChangedType: schemas.TypeResourceInterfaceChanged,
		DeletedType: schemas.TypeResourceInterfaceDeleted, Subject: schemas.ResourceInterfaceSubject,
		Relevant: func(o, n *unstructured.Unstructured) bool {
			return contentChanged(o, n) ||
				o.GetAnnotations()[karta.AnnotationExclusiveTopology] != n.GetAnnotations()[karta.AnnotationExclusiveTopology]
		}}
	ClusterFamily = Family{Name: "cluster", ChangedType: schemas.TypeClusterChanged,
		DeletedType: schemas.TypeClusterDeleted, Subject: func(r schemas.ObjectRef) string { return schemas.ClusterSpecSubject(r.Name) }}
	NamespaceFamily = Family{Name: "namespace", ChangedType: schemas.TypeNamespaceChanged,
		DeletedType: schemas.TypeNamespaceDeleted, Subject: func(r schemas.ObjectRef) string { return schemas.NamespaceSubject(r.Name) },
		Relevant: func(o, n *unstructured.Unstructured) bool { return !reflect.DeepEqual(o.GetLabels(), n.GetLabels()) }}
)

// KnownObject is an object the streams' state holds as existing, in the version its last change published.
type KnownObject struct {
	Ref             schemas.ObjectRef
	ResourceVersion string
}

// tombstone is a deletion to publish: of ref, with the dedupe id id.
type tombstone struct {
	ref schemas.ObjectRef
	id  string
}

// Well-known control-plane kinds.
var (
	NamespaceKind         = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	ClusterKind           = schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "Cluster"}
	SchedulePolicyKind    = schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "SchedulePolicy"}
	ResourceInterfaceKind = schema.GroupVersionKind{Group: "optimization.nvidia.com", Version: "v1alpha1", Kind: "ResourceInterface"}
)

// ControlPlaneProducer watches kinds on the control plane and publishes their changes. Kinds can be added
// while it runs (AddKind), which is how a new workload kind named by a policy or an RI starts being
// watched without a restart. Changes go through a rate-limited work queue keyed by object, so a burst of
// updates to one object publishes its latest state, and a failed publish is retried rather than lost.
type ControlPlaneProducer struct {
	Clients   *kube.Clients
	Publisher *bus.Publisher
	Log       *slog.Logger
	// Known, when set, returns the objects the streams' state holds as existing on the subjects filter
	// selects (their last event is a change). Once a kind's informer has synced, each of them the control
	// plane no longer holds gets its deletion published: an object deleted while no producer ran is seen
	// deleted by no informer, and consumers would keep it (and the placer its copies) for good.
	Known func(ctx context.Context, filter string) ([]KnownObject, error)
	// SkippedNamespaces, when set, matches the namespaces whose workloads are not published: the control
	// plane's own (kube-system's Deployments, fleetflow's) are no framework workloads to place, and no policy
	// may copy them to the fleet or have them annotated.
	SkippedNamespaces *regexp.Regexp

	mu  sync.Mutex
	ctx context.Context
	// resources holds one informer per watched resource, shared by the families watching it.
	resources map[schema.GroupVersionResource]*resourceInformer
	queue     workqueue.TypedRateLimitingInterface[objectKey]
	kinds     map[kindFamilyKey]bool
	pending   []kindFamily
	informers map[informerKey]watched
	// versions records, per group, kind and family, the resource (so the version) being watched: a CRD
	// serving two versions for which there are RIs (a built-in one and one applied later, say) would
	// otherwise publish every object twice, once in each version.
	versions   map[groupKindFamily]schema.GroupVersionResource
	tombstones map[objectKey]tombstone
	// groupKinds are the kinds named without a version that are watched, or waited for (addGroupKind).
	groupKinds map[schema.GroupKind]bool
	wg         sync.WaitGroup
}

type groupKindFamily struct {
	groupKind schema.GroupKind
	family    string
}

type kindFamily struct {
	gvk    schema.GroupVersionKind
	family Family
}

// A kind may be watched as several families: Namespaces are both namespace events (their labels feed
// policies' namespaceSelectors) and, when a policy copies them to clusters, workloads.
type kindFamilyKey struct {
	gvk    schema.GroupVersionKind
	family string
}

type informerKey struct {
	gvr    schema.GroupVersionResource
	family string
}

type watched struct {
	informer     cache.SharedIndexInformer
	registration cache.ResourceEventHandlerRegistration
	family       Family
}

// resourceInformer is the informer of one resource; it stops when no family watches through it any more.
type resourceInformer struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	users    int
}

type objectKey struct {
	informerKey
	namespace string
	name      string
}

// AddKind starts watching gvk as family; adding a kind twice does nothing.
func (p *ControlPlaneProducer) AddKind(gvk schema.GroupVersionKind, family Family) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.kinds == nil {
		p.kinds = map[kindFamilyKey]bool{}
	}
	key := kindFamilyKey{gvk: gvk, family: family.Name}
	if p.kinds[key] {
		return
	}
	p.kinds[key] = true
	if p.ctx == nil {
		p.pending = append(p.pending, kindFamily{gvk, family})
		return
	}
	p.wg.Go(func() { p.watchKind(p.ctx, gvk, family) })
}

// Run watches every added kind until ctx is done. A kind that is not served yet (its CRD is missing) is
// waited for, with a log line, rather than failing the producer.
func (p *ControlPlaneProducer) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.ctx != nil {
		p.mu.Unlock()
		return errors.New("control-plane producer is already running")
	}
	p.ctx = ctx
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[objectKey](),
		workqueue.TypedRateLimitingQueueConfig[objectKey]{Name: "control-plane", MetricsProvider: observe.WorkqueueMetrics})
	p.resources = map[schema.GroupVersionResource]*resourceInformer{}
	p.informers = map[informerKey]watched{}
	p.versions = map[groupKindFamily]schema.GroupVersionResource{}
	p.tombstones = map[objectKey]tombstone{}
	for _, kf := range p.pending {
		p.wg.Go(func() { p.watchKind(ctx, kf.gvk, kf.family) })
	}
	p.pending = nil
	p.mu.Unlock()

	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.processNext(ctx) {
	}
	p.wg.Wait()
	return nil
}

func (p *ControlPlaneProducer) watchKind(ctx context.Context, gvk schema.GroupVersionKind, family Family) {
	log := p.Log.With("kind", gvk.String())
	var gvr schema.GroupVersionResource
	var superseded *schema.GroupVersionResource
	claim := groupKindFamily{groupKind: gvk.GroupKind(), family: family.Name}
	waitingLogged, otherLogged := false, false
	polls := 0
	err := wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(context.Context) (bool, error) {
		polls++
		mapping, err := p.Clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			if !waitingLogged {
				log.Info("kind not served on the control plane yet; waiting for its CRD", "reason", err)
				waitingLogged = true
			}
			p.Clients.RefreshMapper()
			return false, nil
		}
		// Another version of the kind may be watched already. This one waits while that one is served, and
		// takes over once it is not (a CRD replaced by one serving other versions).
		p.mu.Lock()
		other, taken := p.versions[claim]
		p.mu.Unlock()
		replacing := taken && other.Version != gvk.Version
		if replacing {
			if _, err := p.Clients.Mapper.RESTMapping(gvk.GroupKind(), other.Version); err == nil {
				if !otherLogged {
					log.Info("not watching this version while the kind is watched in another one the control plane serves",
						"family", family.Name, "watched_version", other.Version)
					otherLogged = true
				}
				if polls%6 == 0 {
					p.Clients.RefreshMapper() // to notice, now and then, that the other version went away
				}
				return false, nil
			}
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if current, ok := p.versions[claim]; ok && current != other {
			return false, nil // claimed meanwhile by yet another version: look again
		}
		if replacing {
			log.Info("watching this version: the one watched so far is no longer served", "previous_version", other.Version)
			superseded = &other
		}
		p.versions[claim] = mapping.Resource
		gvr = mapping.Resource
		return true, nil
	})
	if err != nil {
		return
	}
	if superseded != nil {
		p.unwatch(*superseded, family)
	}
	p.mu.Lock()
	ri := p.resources[gvr]
	if ri == nil {
		informer := dynamicinformer.NewFilteredDynamicInformer(p.Clients.Dynamic, gvr, "", 0,
			cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}, nil).Informer()
		quietWhenGone(informer, gvr, log)
		runCtx, stop := context.WithCancel(ctx)
		ri = &resourceInformer{informer: informer, stop: stop}
		p.resources[gvr] = ri
		p.wg.Go(func() { informer.Run(runCtx.Done()) })
	}
	ri.users++
	p.mu.Unlock()
	ik := informerKey{gvr: gvr, family: family.Name}
	registration, err := ri.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { p.enqueue(ik, obj) },
		UpdateFunc: func(oldObj, newObj any) {
			if relevantUpdate(family, oldObj, newObj) {
				p.enqueue(ik, newObj)
			}
		},
		DeleteFunc: func(obj any) { p.enqueueDeleted(ik, obj) },
	})
	if err != nil {
		log.Error("cannot watch kind", "error", err)
		return
	}
	p.mu.Lock()
	p.informers[ik] = watched{informer: ri.informer, registration: registration, family: family}
	p.mu.Unlock()
	log.Info("watching", "family", family.Name, "resource", gvr.String())
	if p.Known != nil {
		p.wg.Go(func() { p.publishMissedDeletions(ctx, ik, gvk, family, ri.informer, registration) })
	}
}

// publishMissedDeletions queues the deletion of every object of the kind the streams' state holds as existing
// that the control plane does not hold, or holds in a namespace now skipped, once the informer has synced (see
// Known).
func (p *ControlPlaneProducer) publishMissedDeletions(ctx context.Context, ik informerKey, gvk schema.GroupVersionKind,
	family Family, informer cache.SharedIndexInformer, registration cache.ResourceEventHandlerRegistration) {
	if !cache.WaitForCacheSync(ctx.Done(), registration.HasSynced) {
		return
	}
	filter := kindFilter(gvk, family)
	known, err := p.Known(ctx, filter)
	if err != nil {
		if ctx.Err() == nil {
			p.Log.Warn("cannot read what the streams hold of the kind; deletions made while no producer ran are not published",
				"kind", gvk.String(), "family", family.Name, "error", err)
		}
		return
	}
	missed := 0
	for _, k := range known {
		ref := k.Ref
		storeKey := ref.Name
		if ref.Namespace != "" {
			storeKey = ref.Namespace + "/" + ref.Name
		}
		item, exists, err := informer.GetStore().GetByKey(storeKey)
		if err != nil {
			continue
		}
		gone := &unstructured.Unstructured{Object: map[string]any{"apiVersion": ref.APIVersion, "kind": ref.Kind,
			"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace, "uid": ref.UID}}}
		if exists && string(item.(*unstructured.Unstructured).GetUID()) == ref.UID && !p.skipped(ik, gone) {
			continue
		}
		if !p.skipped(ik, gone) {
			// Created after the informer listed (or deleted and created again), its watch event still on the way,
			// while another replica published it into the streams: the control plane itself says whether it is gone.
			there, err := p.stillThere(ctx, ik.gvr, ref)
			if err != nil {
				p.Log.Warn("cannot tell whether an object the streams hold is gone; its deletion is not published",
					"kind", gvk.String(), "object", storeKey, "error", err)
				continue
			}
			if there {
				continue
			}
		}
		// Not the deletion's usual id: the streams may hold the object again after its deletion was published (a
		// server stopped uncleanly loses recent removals from the state stream), and JetStream would drop a
		// second deletion of that id within its dedupe window. Replicas still agree on this one.
		p.tombstoneWithID(ik, gone, schemas.ObjectDeletedID(family.Name, ref)+"/after/"+k.ResourceVersion)
		missed++
	}
	if missed > 0 {
		p.Log.Info("publishing deletions made while no producer ran", "kind", gvk.String(), "family", family.Name, "deleted", missed)
	}
}

// stillThere reads ref from the control plane: whether the object of its uid is there.
func (p *ControlPlaneProducer) stillThere(ctx context.Context, gvr schema.GroupVersionResource, ref schemas.ObjectRef) (bool, error) {
	current, err := p.Clients.Dynamic.Resource(gvr).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s %s/%s: %w", gvr.Resource, ref.Namespace, ref.Name, err)
	}
	return string(current.GetUID()) == ref.UID, nil
}

// kindFilter selects the subjects of every object of gvk in family, whatever its namespace and name.
func kindFilter(gvk schema.GroupVersionKind, family Family) string {
	const nsMark, nameMark = "__namespace__", "__name__"
	subject := family.Subject(schemas.ObjectRef{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
		Namespace: nsMark, Name: nameMark})
	return strings.NewReplacer(nsMark, "*", nameMark, "*").Replace(subject)
}

// WatchedResources lists the resources whose informers run now, sorted.
func (p *ControlPlaneProducer) WatchedResources() []schema.GroupVersionResource {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.SortedFunc(maps.Keys(p.resources), func(a, b schema.GroupVersionResource) int {
		return cmp.Compare(a.String(), b.String())
	})
}

// unwatch stops publishing one family's objects of a resource, and stops the resource's informer once no
// family watches through it: a version that is no longer served would otherwise retry its watch forever.
func (p *ControlPlaneProducer) unwatch(gvr schema.GroupVersionResource, family Family) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ik := informerKey{gvr: gvr, family: family.Name}
	w, ok := p.informers[ik]
	if !ok {
		return
	}
	delete(p.informers, ik)
	if err := w.informer.RemoveEventHandler(w.registration); err != nil {
		p.Log.Warn("removing an event handler failed", "resource", gvr.String(), "error", err)
	}
	if ri := p.resources[gvr]; ri != nil {
		ri.users--
		if ri.users == 0 {
			ri.stop()
			delete(p.resources, gvr)
		}
	}
}

// relevantUpdate ignores status-only updates and bookkeeping: only a change to what would be copied to a
// workload cluster, or to what placement reads, is worth an event.
func relevantUpdate(family Family, oldObj, newObj any) bool {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	if family.Relevant != nil {
		return family.Relevant(o, n)
	}
	return contentChanged(o, n)
}

// contentChanged reports whether what a copy of the object would hold changed, or it started or stopped being
// deleted.
func contentChanged(o, n *unstructured.Unstructured) bool {
	return !reflect.DeepEqual(objects.SanitizeForCopy(o.Object), objects.SanitizeForCopy(n.Object)) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
}

// skipped reports whether obj, of the family ik watches, is in a namespace whose workloads are not published.
func (p *ControlPlaneProducer) skipped(ik informerKey, u *unstructured.Unstructured) bool {
	return ik.family == WorkloadFamily.Name && p.SkippedNamespaces != nil && p.SkippedNamespaces.MatchString(u.GetNamespace())
}

func (p *ControlPlaneProducer) enqueue(ik informerKey, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || p.skipped(ik, u) {
		return
	}
	key := objectKey{informerKey: ik, namespace: u.GetNamespace(), name: u.GetName()}
	p.mu.Lock()
	// A new object of the name (deleted and created again before the key was handled) keeps the earlier
	// one's deletion, which publish sends first.
	if tomb, ok := p.tombstones[key]; ok && tomb.ref.UID == string(u.GetUID()) {
		delete(p.tombstones, key)
	}
	p.mu.Unlock()
	p.queue.Add(key)
}

func (p *ControlPlaneProducer) enqueueDeleted(ik informerKey, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || p.skipped(ik, u) {
		return
	}
	p.tombstone(ik, u)
}

// tombstone queues the deletion of u, with the deletion's usual dedupe id.
func (p *ControlPlaneProducer) tombstone(ik informerKey, u *unstructured.Unstructured) {
	ref := schemas.RefOf(u.Object)
	p.tombstoneWithID(ik, u, schemas.ObjectDeletedID(ik.family, ref))
}

func (p *ControlPlaneProducer) tombstoneWithID(ik informerKey, u *unstructured.Unstructured, id string) {
	key := objectKey{informerKey: ik, namespace: u.GetNamespace(), name: u.GetName()}
	p.mu.Lock()
	p.tombstones[key] = tombstone{ref: schemas.RefOf(u.Object), id: id}
	p.mu.Unlock()
	p.queue.Add(key)
}

func (p *ControlPlaneProducer) processNext(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	if err := p.publish(ctx, key); err != nil {
		if ctx.Err() != nil {
			return true
		}
		p.Log.Warn("publishing failed; will retry",
			"object", key.namespace+"/"+key.name, "resource", key.gvr.String(), "error", err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

func (p *ControlPlaneProducer) publish(ctx context.Context, key objectKey) error {
	p.mu.Lock()
	w, known := p.informers[key.informerKey]
	tomb, deleted := p.tombstones[key]
	p.mu.Unlock()
	if !known {
		// The watch was superseded by another version of the kind, which publishes the object itself.
		return nil
	}
	storeKey := key.name
	if key.namespace != "" {
		storeKey = key.namespace + "/" + key.name
	}
	item, exists, err := w.informer.GetStore().GetByKey(storeKey)
	if err != nil {
		return fmt.Errorf("read informer cache: %w", err)
	}
	family := w.family
	if exists && p.skipped(key.informerKey, item.(*unstructured.Unstructured)) {
		// A workload the streams hold from before its namespace was skipped goes as if deleted.
		exists = false
	}
	if exists {
		u := item.(*unstructured.Unstructured)
		if deleted && tomb.ref.UID != string(u.GetUID()) {
			// The object the name held before was deleted: consumers must hear of it before the new one takes
			// the name, or they take the new one for a new version of the old (the placer would keep the old
			// one's copies on clusters the new one is not placed on).
			if err := p.sendDeletion(ctx, key, family, tomb); err != nil {
				return err
			}
		}
		payload := &schemas.ObjectChanged{Object: u.Object}
		ref := payload.Ref()
		if err := p.send(ctx, family.ChangedType, family.Subject(ref),
			schemas.ObjectChangedID(family.Name, ref, u.GetResourceVersion()), payload); err != nil {
			return err
		}
		p.watchNamedKinds(family, u)
		return nil
	}
	if !deleted {
		return nil
	}
	return p.sendDeletion(ctx, key, family, tomb)
}

// sendDeletion publishes the deletion of tomb, and forgets it once published unless a later deletion of the
// name took its place.
func (p *ControlPlaneProducer) sendDeletion(ctx context.Context, key objectKey, family Family, tomb tombstone) error {
	err := p.send(ctx, family.DeletedType, family.Subject(tomb.ref), tomb.id, &schemas.ObjectDeleted{Workload: tomb.ref})
	if err == nil {
		p.mu.Lock()
		if p.tombstones[key] == tomb {
			delete(p.tombstones, key)
		}
		p.mu.Unlock()
	}
	return err
}

func (p *ControlPlaneProducer) send(ctx context.Context, eventType, subject, id string, payload schemas.Payload) error {
	event, err := codec.NewEvent(eventType, schemas.SourceControlPlaneProducer, subject, id, payload)
	if err != nil {
		return err
	}
	ack, err := p.Publisher.Publish(ctx, subject, event)
	if err != nil {
		return err
	}
	p.Log.Debug("published", "event_type", eventType, "subject", subject, "seq", ack.Sequence, "duplicate", ack.Duplicate)
	return nil
}

// watchNamedKinds starts watching the workload kinds a policy selects or an RI describes, so a new kind
// needs no restart.
func (p *ControlPlaneProducer) watchNamedKinds(family Family, obj *unstructured.Unstructured) {
	switch family.Name {
	case PolicyFamily.Name:
		for _, gk := range SelectedKinds(obj.Object) {
			p.addGroupKind(gk)
		}
	case ResourceInterfaceFamily.Name:
		if gvk, ok := DescribedKind(obj.Object); ok {
			p.AddKind(gvk, WorkloadFamily)
		}
	}
}

// SelectedKinds are the kinds a SchedulePolicy object's resourceSelectors name.
func SelectedKinds(policy map[string]any) []schema.GroupKind {
	kinds, _, _ := unstructured.NestedSlice(policy, "spec", "resourceSelectors", "kinds")
	var out []schema.GroupKind
	for _, k := range kinds {
		m, _ := k.(map[string]any)
		group, _ := m["group"].(string)
		kind, _ := m["kind"].(string)
		if kind != "" {
			out = append(out, schema.GroupKind{Group: group, Kind: kind})
		}
	}
	return out
}

// DescribedKind is the kind a ResourceInterface object describes: its root component's.
func DescribedKind(ri map[string]any) (schema.GroupVersionKind, bool) {
	root, _, _ := unstructured.NestedStringMap(ri, "spec", "structureDefinition", "rootComponent", "kind")
	if root["kind"] == "" || root["version"] == "" {
		return schema.GroupVersionKind{}, false
	}
	return schema.GroupVersionKind{Group: root["group"], Version: root["version"], Kind: root["kind"]}, true
}

// addGroupKind watches a kind named without a version at the version the control plane prefers, once the
// kind is served. One goroutine waits per kind, however often policies naming it are published: a policy
// naming a kind no CRD serves (a typo) would otherwise add a poller at every edit.
func (p *ControlPlaneProducer) addGroupKind(gk schema.GroupKind) {
	p.mu.Lock()
	ctx := p.ctx
	_, already := p.groupKinds[gk]
	if ctx != nil && !already {
		if p.groupKinds == nil {
			p.groupKinds = map[schema.GroupKind]bool{}
		}
		p.groupKinds[gk] = true
	}
	p.mu.Unlock()
	if ctx == nil || already {
		return
	}
	p.wg.Go(func() {
		_ = wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(context.Context) (bool, error) {
			mapping, err := p.Clients.Mapper.RESTMapping(gk)
			if err != nil {
				p.Clients.RefreshMapper()
				return false, nil
			}
			p.AddKind(mapping.GroupVersionKind, WorkloadFamily)
			return true, nil
		})
	})
}
