package pinner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas"
)

// LeaseName is the Lease that elects the pinner of a cluster.
const LeaseName = "fleetflow-pinner"

// Pinner pins the gated pods of one cluster (see the package doc).
type Pinner struct {
	Cluster string
	Clients *kube.Clients
	Log     *slog.Logger
	// LeaseNamespace holds the Lease; kube-system when empty.
	LeaseNamespace string
	// Identity names this pinner in the Lease; the host name and the process id when empty.
	Identity string
}

// group is the pods of one component of one copy: they share the component's packed nodes.
type group struct{ namespace, copyName, component string }

func groupOf(pod *corev1.Pod) group {
	return group{namespace: pod.Namespace, copyName: pod.Annotations[schemas.AnnotationPinCopy],
		component: pod.Annotations[schemas.AnnotationPinComponent]}
}

func (g group) key() string { return g.namespace + "\x00" + g.copyName + "\x00" + g.component }

const groupIndex = "pinGroup"

// Run pins pods while this pinner holds the cluster's Lease, and runs for the Lease again when it loses it,
// until ctx ends.
func (p *Pinner) Run(ctx context.Context) error {
	identity := p.Identity
	if identity == "" {
		host, _ := os.Hostname()
		identity = host + "-" + strconv.Itoa(os.Getpid())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cmp.Or(p.LeaseNamespace, metav1.NamespaceSystem), Name: LeaseName},
		Client:     p.Clients.Core.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	for ctx.Err() == nil {
		elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			ReleaseOnCancel: true, Name: LeaseName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					if err := p.pin(ctx); err != nil && ctx.Err() == nil {
						p.Log.Error("pinner stopped", "cluster", p.Cluster, "error", err)
					}
				},
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			return fmt.Errorf("pinner of cluster %s: %w", p.Cluster, err)
		}
		elector.Run(ctx)
	}
	return nil
}

// pin watches the pinned pods and releases each gated one, group by group, until ctx ends.
func (p *Pinner) pin(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(p.Clients.Core, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = schemas.LabelPinned + "=true" }))
	informer := factory.Core().V1().Pods().Informer()
	if err := informer.AddIndexers(cache.Indexers{groupIndex: func(obj any) ([]string, error) {
		if pod, ok := obj.(*corev1.Pod); ok {
			return []string{groupOf(pod).key()}, nil
		}
		return nil, nil
	}}); err != nil {
		return err
	}
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[group]())
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if pod, ok := obj.(*corev1.Pod); ok {
			queue.Add(groupOf(pod))
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return ctx.Err()
	}
	p.Log.Info("pinner leading", "cluster", p.Cluster)
	w := &worker{p: p, indexer: informer.GetIndexer(), assumed: map[group]map[types.UID]string{}}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		g, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		if err := w.release(ctx, g); err != nil {
			p.Log.Warn("pods not pinned yet; retrying", "cluster", p.Cluster, "namespace", g.namespace, "copy", g.copyName,
				"component", g.component, "error", err)
			queue.AddRateLimited(g)
		} else {
			queue.Forget(g)
		}
		queue.Done(g)
	}
}

// worker releases the gated pods of one group at a time; one worker runs, so two pods of a group are never
// pinned from the same count.
type worker struct {
	p       *Pinner
	indexer cache.Indexer
	// assumed are the pods pinned whose update the informer has not shown yet, and the node of each.
	assumed map[group]map[types.UID]string
}

// release pins every gated pod of g to a packed node with room for it, oldest pod first.
func (w *worker) release(ctx context.Context, g group) error {
	objs, err := w.indexer.ByIndex(groupIndex, g.key())
	if err != nil {
		return err
	}
	assumed := w.assumed[g]
	used := map[string]int64{}
	var waiting []*corev1.Pod
	leaving := false
	present := map[types.UID]bool{}
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		present[pod.UID] = true
		if gated(pod) {
			if node, ok := assumed[pod.UID]; ok {
				used[node]++
				continue
			}
			waiting = append(waiting, pod)
			continue
		}
		delete(assumed, pod.UID)
		if node := pinnedNode(pod); node != "" && holdsNode(pod) {
			used[node]++
			leaving = leaving || pod.DeletionTimestamp != nil
		}
	}
	for uid := range assumed {
		if !present[uid] {
			delete(assumed, uid)
		}
	}
	if len(assumed) == 0 {
		delete(w.assumed, g)
	}
	if len(waiting) == 0 {
		return nil
	}
	packed, err := w.packed(ctx, g)
	if err != nil {
		return err
	}
	slices.SortFunc(waiting, func(a, b *corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	var errs []error
	for _, pod := range waiting {
		node, ok := slotFor(packed, used)
		if !ok && leaving && packed != nil {
			return nil // a pod of the group is going: its node takes this one once it is gone (its delete requeues g)
		}
		if !ok {
			w.p.Log.Warn("pod let go unpinned: no packed node of its component has room left for it", "cluster", w.p.Cluster,
				"pod", pod.Namespace+"/"+pod.Name, "copy", g.copyName, "component", g.component)
		}
		updated, err := w.p.Clients.Core.CoreV1().Pods(pod.Namespace).Update(ctx, released(pod, node), metav1.UpdateOptions{
			FieldManager: "fleetflow-pinner"})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			observe.PinnedPods.WithLabelValues(w.p.Cluster, "failed").Inc()
			errs = append(errs, fmt.Errorf("pod %s/%s: pin to node %q: %w", pod.Namespace, pod.Name, node, err))
			continue
		case node == "":
			observe.PinnedPods.WithLabelValues(w.p.Cluster, "unpinned").Inc()
		default:
			observe.PinnedPods.WithLabelValues(w.p.Cluster, "pinned").Inc()
		}
		if node != "" {
			used[node]++
			if w.assumed[g] == nil {
				w.assumed[g] = map[types.UID]string{}
			}
			w.assumed[g][updated.UID] = node
		}
	}
	return errors.Join(errs...)
}

// packed reads the component's packed nodes from its copy; nil when the copy is gone, has no pins or none for
// the component (its pods go unpinned).
func (w *worker) packed(ctx context.Context, g group) (map[string]int64, error) {
	kind, apiVersion, name, err := schemas.ParsePinCopy(g.copyName)
	if err != nil {
		w.p.Log.Warn("pods let go unpinned", "cluster", w.p.Cluster, "namespace", g.namespace, "error", err)
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		w.p.Log.Warn("pods let go unpinned", "cluster", w.p.Cluster, "namespace", g.namespace, "copy", g.copyName,
			"error", fmt.Errorf("annotation %s: %w", schemas.AnnotationPinCopy, err))
		return nil, nil
	}
	mapping, err := w.p.Clients.Mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		if kube.IsNoMatch(err) {
			w.p.Clients.RefreshMapper()
		}
		return nil, fmt.Errorf("copy %s: %w", g.copyName, err)
	}
	copyObj, err := w.p.Clients.Dynamic.Resource(mapping.Resource).Namespace(g.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("copy %s: %w", g.copyName, err)
	}
	value, ok := copyObj.GetAnnotations()[schemas.AnnotationPins]
	if !ok {
		return nil, nil
	}
	pins, err := schemas.ParsePins(value)
	if err != nil {
		w.p.Log.Warn("pods let go unpinned", "cluster", w.p.Cluster, "namespace", g.namespace, "copy", g.copyName, "error", err)
		return nil, nil
	}
	return pins[g.component], nil
}
