package producers

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetflow/fleetflow/schemas"
)

// placedSelector selects the objects the applier placed: managed by fleetflow and tied to a workload.
const placedSelector = schemas.ManagedSelector + "," + schemas.LabelWorkloadUID

// placedTomb is what a deleted copy's Gone event says: its identity and the last status it had, so a
// reader that missed that status (a placer rebuilding from the state stream, where the Gone took the status's
// place) still knows whether the copy had finished before it went.
type placedTomb struct {
	ref    schemas.ObjectRef
	status map[string]any
}

type statusKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

func (k statusKey) storeKey() string {
	if k.namespace == "" {
		return k.name
	}
	return k.namespace + "/" + k.name
}

// kindWatch is the informer on the placed objects of one kind.
type kindWatch struct {
	gvr      schema.GroupVersionResource
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
}

// AddKind makes the producer report the status of placed objects of gvk, from now on or once the
// cluster serves the kind. It may be called before or during Run.
func (p *ClusterProducer) AddKind(gvk schema.GroupVersionKind) {
	p.mu.Lock()
	if p.wantedKinds == nil {
		p.wantedKinds = map[schema.GroupVersionKind]bool{}
	}
	p.wantedKinds[gvk] = true
	running := p.running && p.served != nil
	p.mu.Unlock()
	if running {
		p.ensureKindWatches()
	}
}

// AddGroupKind watches the placed objects of a kind named without a version (as a SchedulePolicy's
// resourceSelectors name kinds) in the version the cluster prefers among those it serves: a copy of it deleted
// in the cluster is then seen gone and applied again.
func (p *ClusterProducer) AddGroupKind(gk schema.GroupKind) {
	p.mu.Lock()
	if p.wantedGroupKinds == nil {
		p.wantedGroupKinds = map[schema.GroupKind]bool{}
	}
	p.wantedGroupKinds[gk] = true
	running := p.running && p.served != nil
	p.mu.Unlock()
	if running {
		p.ensureKindWatches()
	}
}

// servedVersionOf is the version of gk the cluster serves that Kubernetes ranks first (v1 before v1beta1
// before v1alpha1); p.mu is held.
func (p *ClusterProducer) servedVersionOf(gk schema.GroupKind) (schema.GroupVersionKind, bool) {
	var best schema.GroupVersionKind
	for api := range p.served {
		gvk, err := ParseAPI(api)
		if err != nil || gvk.GroupKind() != gk {
			continue
		}
		if best.Version == "" || version.CompareKubeAwareVersionStrings(gvk.Version, best.Version) > 0 {
			best = gvk
		}
	}
	return best, best.Version != ""
}

// WatchedKinds lists the kinds whose placed objects are being watched now.
func (p *ClusterProducer) WatchedKinds() []schema.GroupVersionKind {
	p.mu.Lock()
	defer p.mu.Unlock()
	kinds := make([]schema.GroupVersionKind, 0, len(p.kindWatches))
	for gvk := range p.kindWatches {
		kinds = append(kinds, gvk)
	}
	return sortKinds(kinds)
}

// ensureKindWatches watches every wanted kind the cluster serves, and stops watching kinds it no longer
// serves (their CRD was deleted, and with it every object of the kind).
func (p *ClusterProducer) ensureKindWatches() {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	p.mu.Lock()
	var start []schema.GroupVersionKind
	var stop []*kindWatch
	for gvk, w := range p.kindWatches {
		if !p.served[APIString(gvk)] {
			stop = append(stop, w)
			delete(p.kindWatches, gvk)
		}
	}
	// One version per group and kind: a CRD serving two wanted versions would report every placed object
	// twice. Wanted kinds are sorted, so which version that is does not change from call to call.
	watching := map[schema.GroupKind]bool{}
	for gvk := range p.kindWatches {
		watching[gvk.GroupKind()] = true
	}
	for _, gvk := range sortKinds(slices.Collect(maps.Keys(p.wantedKinds))) {
		if p.served[APIString(gvk)] && !watching[gvk.GroupKind()] {
			start = append(start, gvk)
			watching[gvk.GroupKind()] = true
		}
	}
	for _, gk := range slices.SortedFunc(maps.Keys(p.wantedGroupKinds), func(a, b schema.GroupKind) int {
		return cmp.Compare(a.String(), b.String())
	}) {
		if watching[gk] {
			continue
		}
		if gvk, ok := p.servedVersionOf(gk); ok {
			start = append(start, gvk)
			watching[gk] = true
		}
	}
	ctx := p.runCtx
	p.mu.Unlock()
	if ctx.Err() != nil {
		return
	}

	for _, w := range stop {
		w.cancel()
		for _, obj := range w.informer.GetStore().List() {
			p.statusDeleted(w.gvr, obj)
		}
		p.Log.Info("kind no longer served; stopped watching its placed objects", "resource", w.gvr.String())
	}
	for _, gvk := range start {
		if err := p.startKindWatch(ctx, gvk); err != nil {
			p.Log.Warn("cannot watch placed objects of kind; will retry at the next discovery of the cluster's APIs",
				"kind", gvk.String(), "error", err)
		}
	}
}

func (p *ClusterProducer) startKindWatch(ctx context.Context, gvk schema.GroupVersionKind) error {
	mapping, err := p.Clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		p.Clients.RefreshMapper()
		if mapping, err = p.Clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return fmt.Errorf("resolve %s: %w", gvk, err)
		}
	}
	gvr := mapping.Resource
	informer := dynamicinformer.NewFilteredDynamicInformer(p.Clients.Dynamic, gvr, metav1.NamespaceAll, 0,
		cache.Indexers{}, func(o *metav1.ListOptions) { o.LabelSelector = placedSelector }).Informer()
	quietWhenGone(informer, gvr, p.Log)
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.statusChanged(gvr, obj) },
		UpdateFunc: func(_, obj any) { p.statusChanged(gvr, obj) },
		DeleteFunc: func(obj any) { p.statusDeleted(gvr, obj) },
	})
	if err != nil {
		return fmt.Errorf("watch %s: %w", gvr, err)
	}
	watchCtx, cancel := context.WithCancel(ctx)
	p.mu.Lock()
	p.kindWatches[gvk] = &kindWatch{gvr: gvr, informer: informer, cancel: cancel}
	p.mu.Unlock()
	p.kindsWG.Go(func() { informer.Run(watchCtx.Done()) })
	p.kindsWG.Go(func() {
		if cache.WaitForCacheSync(watchCtx.Done(), informer.HasSynced) {
			p.queueMissedGone(watchCtx, gvk, gvr, informer)
		}
	})
	p.Log.Info("watching placed objects", "kind", gvk.String(), "resource", gvr.String())
	return nil
}

// knownPlaced reads KnownPlaced once per run, for the first kind watch that syncs: what the streams held
// when the producer started is what a later watch compares with too (a kind it did not watch then has no
// status of this run in them), and each read walks every status of the cluster.
func (p *ClusterProducer) knownPlaced(ctx context.Context) ([]schemas.WorkloadStatus, error) {
	p.knownMu.Lock()
	defer p.knownMu.Unlock()
	if p.known != nil {
		return p.known, nil
	}
	known, err := p.KnownPlaced(ctx)
	if err != nil {
		return nil, err
	}
	if known == nil {
		known = []schemas.WorkloadStatus{}
	}
	p.known = known
	return known, nil
}

// queueMissedGone queues a Gone for every copy of gvk whose last state in the streams says it is in the
// cluster, though the synced cache of the kind does not have it (see KnownPlaced).
func (p *ClusterProducer) queueMissedGone(ctx context.Context, gvk schema.GroupVersionKind, gvr schema.GroupVersionResource,
	informer cache.SharedIndexInformer) {
	if p.KnownPlaced == nil {
		return
	}
	known, err := p.knownPlaced(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.Log.Warn("cannot read the placed copies the streams hold; copies deleted while no producer ran are not published gone",
				"kind", gvk.String(), "error", err)
		}
		return
	}
	type missedCopy struct {
		key    statusKey
		status *schemas.WorkloadStatus
	}
	var candidates []missedCopy
	for i := range known {
		st := &known[i]
		if st.Gone || st.Cluster != p.Cluster || st.Workload.UID == "" {
			continue
		}
		gv, err := schema.ParseGroupVersion(st.Workload.APIVersion)
		if err != nil || gv.WithKind(st.Workload.Kind).GroupKind() != gvk.GroupKind() {
			continue
		}
		key := statusKey{gvr: gvr, namespace: st.Workload.Namespace, name: st.Workload.Name}
		if _, exists, err := informer.GetStore().GetByKey(key.storeKey()); err != nil || exists {
			continue
		}
		// Applied after the informer listed, its watch event still on the way, while another replica reported
		// it: the cluster itself says whether it is gone.
		current, err := p.Clients.Dynamic.Resource(gvr).Namespace(key.namespace).Get(ctx, key.name, metav1.GetOptions{})
		switch {
		case err == nil && current.GetLabels()[schemas.LabelWorkloadUID] == st.Workload.UID:
			continue
		case err != nil && !apierrors.IsNotFound(err):
			p.Log.Warn("cannot tell whether a placed copy the streams hold is gone; it is not published gone",
				"kind", gvk.String(), "copy", key.storeKey(), "error", err)
			continue
		}
		candidates = append(candidates, missedCopy{key: key, status: st})
	}
	var missed []statusKey
	p.mu.Lock()
	for _, c := range candidates {
		if _, tomb := p.statusTomb[c.key]; !tomb {
			p.statusTomb[c.key] = &placedTomb{ref: c.status.Workload, status: c.status.Status}
		}
		missed = append(missed, c.key)
	}
	p.mu.Unlock()
	for _, key := range missed {
		p.statusQ.Add(key)
	}
	if len(missed) > 0 {
		p.Log.Info("publishing copies deleted while no producer ran as gone", "kind", gvk.String(), "copies", len(missed))
	}
}

func asUnstructured(obj any) *unstructured.Unstructured {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, _ := obj.(*unstructured.Unstructured)
	return u
}

func (p *ClusterProducer) statusChanged(gvr schema.GroupVersionResource, obj any) {
	u := asUnstructured(obj)
	if u == nil {
		return
	}
	key := statusKey{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	uid := u.GetLabels()[schemas.LabelWorkloadUID]
	p.mu.Lock()
	delete(p.statusTomb, key)
	p.indexWorkload(key, uid)
	p.mu.Unlock()
	p.statusQ.AddAfter(key, p.CoalesceWindow)
}

func (p *ClusterProducer) statusDeleted(gvr schema.GroupVersionResource, obj any) {
	u := asUnstructured(obj)
	if u == nil {
		return
	}
	key := statusKey{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	tomb := &placedTomb{ref: placedRef(u)}
	tomb.status, _ = u.Object["status"].(map[string]any)
	p.mu.Lock()
	p.statusTomb[key] = tomb
	p.indexWorkload(key, "")
	p.mu.Unlock()
	p.statusQ.Add(key)
}

// indexWorkload files key under uid ("" removes it); p.mu must be held.
func (p *ClusterProducer) indexWorkload(key statusKey, uid string) {
	if old, ok := p.statusUID[key]; ok && old != uid {
		delete(p.byWorkload[old], key)
		if len(p.byWorkload[old]) == 0 {
			delete(p.byWorkload, old)
		}
	}
	if uid == "" {
		delete(p.statusUID, key)
		return
	}
	p.statusUID[key] = uid
	if p.byWorkload[uid] == nil {
		p.byWorkload[uid] = map[statusKey]bool{}
	}
	p.byWorkload[uid][key] = true
}

// placedRef is the control-plane identity of a placed object: its own apiVersion, kind, namespace and name
// (the applier keeps them) and the control-plane uid from its label.
func placedRef(u *unstructured.Unstructured) schemas.ObjectRef {
	return schemas.ObjectRef{
		APIVersion: u.GetAPIVersion(),
		Kind:       u.GetKind(),
		Namespace:  u.GetNamespace(),
		Name:       u.GetName(),
		UID:        u.GetLabels()[schemas.LabelWorkloadUID],
	}
}

func (p *ClusterProducer) processStatus(ctx context.Context) bool {
	key, shutdown := p.statusQ.Get()
	if shutdown {
		return false
	}
	defer p.statusQ.Done(key)
	if err := p.publishStatus(ctx, key); err != nil {
		if ctx.Err() != nil {
			return true
		}
		p.Log.Warn("publishing workload status failed; will retry",
			"workload", key.storeKey(), "resource", key.gvr.String(), "error", err)
		p.statusQ.AddRateLimited(key)
		return true
	}
	p.statusQ.Forget(key)
	return true
}

func (p *ClusterProducer) publishStatus(ctx context.Context, key statusKey) error {
	p.mu.Lock()
	var informer cache.SharedIndexInformer
	for _, w := range p.kindWatches {
		if w.gvr == key.gvr {
			informer = w.informer
			break
		}
	}
	tomb, deleted := p.statusTomb[key]
	p.mu.Unlock()

	var u *unstructured.Unstructured
	if informer != nil {
		item, exists, err := informer.GetStore().GetByKey(key.storeKey())
		if err != nil {
			return fmt.Errorf("read placed-object cache: %w", err)
		}
		if exists {
			u = item.(*unstructured.Unstructured)
		}
	}
	if u == nil {
		if !deleted || tomb.ref.UID == "" {
			return nil
		}
		subject := schemas.WorkloadStatusSubject(p.Cluster, tomb.ref)
		payload := &schemas.WorkloadStatus{Cluster: p.Cluster, Workload: tomb.ref, Status: tomb.status, Gone: true}
		if err := p.publisher.publish(ctx, schemas.TypeWorkloadStatus, subject, "status", p.Cluster+"/"+tomb.ref.Key(), payload); err != nil {
			return err
		}
		p.publisher.markGone(subject)
		p.mu.Lock()
		if p.statusTomb[key] == tomb {
			delete(p.statusTomb, key)
		}
		p.mu.Unlock()
		return nil
	}

	ref := placedRef(u)
	if ref.UID == "" {
		return nil // the selector requires the label; a cache racing a label removal may still hold it
	}
	payload := &schemas.WorkloadStatus{Cluster: p.Cluster, Workload: ref, Generation: u.GetGeneration(),
		SourceContent: u.GetAnnotations()[schemas.AnnotationSourceContent]}
	if source, err := strconv.ParseInt(u.GetAnnotations()[schemas.AnnotationSourceGeneration], 10, 64); err == nil && source > 0 {
		payload.SourceGeneration = source
	}
	if status, ok := u.Object["status"].(map[string]any); ok {
		payload.Status = status
	}
	pending, since, err := p.pendingPods(ctx, ref.UID)
	if err != nil {
		return err
	}
	payload.PendingPods = pending
	payload.PendingSince = since
	return p.publisher.publish(ctx, schemas.TypeWorkloadStatus, schemas.WorkloadStatusSubject(p.Cluster, ref),
		"status", p.Cluster+"/"+ref.Key(), payload)
}

// pendingPods counts the pods of workload uid that wait for a node, and when the oldest was created.
func (p *ClusterProducer) pendingPods(ctx context.Context, uid string) (int, *time.Time, error) {
	waiting, err := p.podInformer.GetIndexer().ByIndex(podIndexUnscheduled, unscheduledValue)
	if err != nil {
		return 0, nil, fmt.Errorf("unscheduled pods: %w", err)
	}
	count := 0
	var oldest *time.Time
	for _, obj := range waiting {
		pod := obj.(*corev1.Pod)
		owner, err := p.owners.workloadOf(ctx, pod)
		if err != nil {
			return 0, nil, fmt.Errorf("workload of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		if owner != uid {
			continue
		}
		count++
		created := pod.CreationTimestamp.UTC()
		if oldest == nil || created.Before(*oldest) {
			oldest = &created
		}
	}
	return count, oldest, nil
}

// processPod finds the workload of a pod that started or stopped waiting for a node, and recomputes that
// workload's status.
func (p *ClusterProducer) processPod(ctx context.Context) bool {
	key, shutdown := p.podQueue.Get()
	if shutdown {
		return false
	}
	defer p.podQueue.Done(key)
	p.mu.Lock()
	pod := p.podLatest[key]
	p.mu.Unlock()
	if pod == nil {
		p.podQueue.Forget(key)
		return true
	}
	uid, err := p.owners.workloadOf(ctx, pod)
	if err != nil {
		if ctx.Err() == nil {
			p.Log.Warn("finding the workload of a pending pod failed; will retry",
				"pod", key.namespace+"/"+key.name, "error", err)
			p.podQueue.AddRateLimited(key)
		}
		return true
	}
	p.podQueue.Forget(key)
	p.mu.Lock()
	if p.podLatest[key] == pod {
		delete(p.podLatest, key)
	}
	var keys []statusKey
	for k := range p.byWorkload[uid] {
		keys = append(keys, k)
	}
	p.mu.Unlock()
	for _, k := range keys {
		p.statusQ.AddAfter(k, p.CoalesceWindow)
	}
	return true
}
