package producers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas"
)

// Defaults of ClusterProducer's intervals.
const (
	DefaultHeartbeat      = 5 * time.Second
	DefaultAPIsResync     = 30 * time.Second
	DefaultCoalesceWindow = 200 * time.Millisecond
	// DefaultStateResync is longer than the streams' default duplicate window, so a resync republishes
	// a state that JetStream dropped as a duplicate of an older identical one (see statePublisher).
	DefaultStateResync = 10 * time.Minute
)

// ClusterProducer publishes what the placer needs to know about ONE workload cluster: its nodes with the
// resources their pods request, the kinds it serves, a heartbeat while its apiserver answers, and the
// status of the workloads fleetflow placed there.
//
// Every state event id is derived from the content (schemas.ContentID), so two replicas watching the same
// cluster publish the same ids for the same state and JetStream stores it once. Node and status changes
// go through rate-limited work queues keyed by node or object with a coalescing delay, so a burst of pod
// changes on one node makes a bounded number of events and a failed publish is retried.
type ClusterProducer struct {
	Cluster   string
	Clients   *kube.Clients
	Publisher *bus.Publisher
	Log       *slog.Logger
	// Heartbeat is the interval between heartbeats (default 5s).
	Heartbeat time.Duration
	// APIsResync is how often discovery is polled for installed APIs (default 30s); a change of any
	// CustomResourceDefinition also triggers discovery.
	APIsResync time.Duration
	// CoalesceWindow delays the recomputation of a node or workload status after a change, so the changes
	// within the window make one event (default 200ms).
	CoalesceWindow time.Duration
	// StateResync republishes every node and workload status this often (default 10m), which repairs a
	// state that JetStream deduplicated away while this producer was not running. Negative disables it.
	StateResync time.Duration
	// Kinds are the workload kinds whose placed objects (label app.kubernetes.io/managed-by=fleetflow)
	// report status. A kind is watched once the cluster serves it; AddKind adds more while running.
	Kinds []schema.GroupVersionKind
	// KnownNodes, when set, returns the names of the cluster's nodes whose last event in the streams' state
	// is a node state. Once the node cache has synced, each of them the cluster no longer has gets its
	// deletion published: a node removed while no producer ran is seen deleted by no informer, and the placer
	// would keep its capacity for good.
	KnownNodes func(ctx context.Context) ([]string, error)
	// KnownPlaced, when set, returns the last state the streams hold of each copy placed in the cluster
	// (gone ones included). Once the watch of a kind has synced, each copy of that kind the cluster no longer
	// has, though its last state says it is there, is published gone: a copy deleted while no producer ran
	// is seen deleted by no informer, and the placer would never apply it again.
	KnownPlaced func(ctx context.Context) ([]schemas.WorkloadStatus, error)

	// knownMu guards known, what KnownPlaced returned at the first kind watch's sync (knownPlaced).
	knownMu sync.Mutex
	known   []schemas.WorkloadStatus

	mu          sync.Mutex
	running     bool
	wantedKinds map[schema.GroupVersionKind]bool
	// wantedGroupKinds are kinds named without a version (AddGroupKind).
	wantedGroupKinds map[schema.GroupKind]bool
	served           map[string]bool
	kindWatches      map[schema.GroupVersionKind]*kindWatch

	runCtx    context.Context
	publisher *statePublisher
	owners    *ownerResolver

	nodeInformer cache.SharedIndexInformer
	podInformer  cache.SharedIndexInformer
	nodeQueue    workqueue.TypedRateLimitingInterface[string]
	nodeTombs    map[string]string // node name -> uid of the deleted node

	podQueue   workqueue.TypedRateLimitingInterface[podKey]
	podLatest  map[podKey]*corev1.Pod
	statusQ    workqueue.TypedRateLimitingInterface[statusKey]
	statusTomb map[statusKey]*placedTomb
	byWorkload map[string]map[statusKey]bool // workload uid -> placed objects carrying it
	statusUID  map[statusKey]string          // placed object -> its workload uid
	watchMu    sync.Mutex                    // serializes starting and stopping kind watches

	apisTrigger chan struct{}
	kindsWG     sync.WaitGroup
}

// Pod indexes of the producer's pod informer.
const (
	podIndexNode        = "node"
	podIndexUnscheduled = "unscheduled"
	unscheduledValue    = "true"
)

// Run publishes until ctx is done. It returns an error only for a producer that cannot start: missing
// fields, or caches that never sync.
func (p *ClusterProducer) Run(ctx context.Context) error {
	if err := p.init(ctx); err != nil {
		return err
	}
	log := p.Log
	factory := informers.NewSharedInformerFactory(p.Clients.Core, 0)
	p.nodeInformer = factory.Core().V1().Nodes().Informer()
	p.podInformer = factory.Core().V1().Pods().Informer()
	if err := p.podInformer.AddIndexers(cache.Indexers{
		podIndexNode:        indexPodByNode,
		podIndexUnscheduled: indexPodUnscheduled,
	}); err != nil {
		return fmt.Errorf("cluster %s: pod indexers: %w", p.Cluster, err)
	}
	if err := p.addNodeHandlers(); err != nil {
		return err
	}
	if err := p.addPodHandlers(); err != nil {
		return err
	}
	crdInformer := p.crdInformer()
	if _, err := crdInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.triggerAPIs() },
		UpdateFunc: func(any, any) { p.triggerAPIs() },
		DeleteFunc: func(any) { p.triggerAPIs() },
	}); err != nil {
		return fmt.Errorf("cluster %s: watch CustomResourceDefinitions: %w", p.Cluster, err)
	}

	var wg sync.WaitGroup
	// The heartbeat does not wait for the caches: a reachable apiserver is worth reporting at once.
	wg.Go(func() { p.heartbeatLoop(ctx) })
	factory.Start(ctx.Done())
	wg.Go(func() { crdInformer.Run(ctx.Done()) })
	if !cache.WaitForCacheSync(ctx.Done(), p.nodeInformer.HasSynced, p.podInformer.HasSynced) {
		p.shutdown()
		wg.Wait()
		factory.Shutdown()
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("cluster %s: node and pod caches did not sync", p.Cluster)
	}
	log.Info("cluster producer started", "heartbeat", p.Heartbeat, "apis_resync", p.APIsResync,
		"coalesce_window", p.CoalesceWindow)
	p.queueMissedNodeDeletions(ctx)

	wg.Go(func() { p.apisLoop(ctx) })
	wg.Go(func() { p.resyncLoop(ctx) })
	wg.Go(func() {
		for p.processNode(ctx) {
		}
	})
	wg.Go(func() {
		for p.processPod(ctx) {
		}
	})
	wg.Go(func() {
		for p.processStatus(ctx) {
		}
	})
	<-ctx.Done()
	p.shutdown()
	wg.Wait()
	p.kindsWG.Wait()
	factory.Shutdown()
	return nil
}

func (p *ClusterProducer) init(ctx context.Context) error {
	var errs []error
	if p.Cluster == "" {
		errs = append(errs, errors.New("field Cluster: required"))
	}
	if p.Clients == nil || p.Clients.Core == nil || p.Clients.Dynamic == nil || p.Clients.Mapper == nil {
		errs = append(errs, errors.New("field Clients: Core, Dynamic and Mapper are required"))
	}
	if p.Publisher == nil {
		errs = append(errs, errors.New("field Publisher: required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cluster producer %q: %w", p.Cluster, err)
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	p.Log = p.Log.With("cluster", p.Cluster)
	if p.Heartbeat <= 0 {
		p.Heartbeat = DefaultHeartbeat
	}
	if p.APIsResync <= 0 {
		p.APIsResync = DefaultAPIsResync
	}
	if p.CoalesceWindow <= 0 {
		p.CoalesceWindow = DefaultCoalesceWindow
	}
	if p.StateResync == 0 {
		p.StateResync = DefaultStateResync
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return fmt.Errorf("cluster producer %q: Run called twice", p.Cluster)
	}
	p.running = true
	p.runCtx = ctx
	if p.wantedKinds == nil {
		p.wantedKinds = map[schema.GroupVersionKind]bool{}
	}
	for _, gvk := range p.Kinds {
		p.wantedKinds[gvk] = true
	}
	p.kindWatches = map[schema.GroupVersionKind]*kindWatch{}
	p.publisher = &statePublisher{publisher: p.Publisher, source: schemas.SourceClusterProducer(p.Cluster),
		log: p.Log, last: map[string]*publishedState{}, registration: schemas.ClusterSpecSubject(p.Cluster)}
	p.owners = newOwnerResolver(p.Clients)
	p.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "cluster-nodes-" + p.Cluster, MetricsProvider: observe.WorkqueueMetrics})
	p.podQueue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[podKey](),
		workqueue.TypedRateLimitingQueueConfig[podKey]{Name: "cluster-pods-" + p.Cluster, MetricsProvider: observe.WorkqueueMetrics})
	p.statusQ = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[statusKey](),
		workqueue.TypedRateLimitingQueueConfig[statusKey]{Name: "cluster-status-" + p.Cluster, MetricsProvider: observe.WorkqueueMetrics})
	p.nodeTombs = map[string]string{}
	p.podLatest = map[podKey]*corev1.Pod{}
	p.statusTomb = map[statusKey]*placedTomb{}
	p.knownMu.Lock()
	p.known = nil
	p.knownMu.Unlock()
	p.byWorkload = map[string]map[statusKey]bool{}
	p.statusUID = map[statusKey]string{}
	p.apisTrigger = make(chan struct{}, 1)
	return nil
}

func (p *ClusterProducer) shutdown() {
	p.nodeQueue.ShutDown()
	p.podQueue.ShutDown()
	p.statusQ.ShutDown()
	p.mu.Lock()
	for _, w := range p.kindWatches {
		w.cancel()
	}
	p.mu.Unlock()
}

// resyncLoop republishes every state now and then; see StateResync.
func (p *ClusterProducer) resyncLoop(ctx context.Context) {
	if p.StateResync < 0 {
		return
	}
	ticker := time.NewTicker(p.StateResync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		p.publisher.forgetContent(time.Now().Add(-p.StateResync))
		for _, name := range p.nodeInformer.GetStore().ListKeys() {
			p.nodeQueue.Add(name)
		}
		p.mu.Lock()
		for _, set := range p.byWorkload {
			for key := range set {
				p.statusQ.Add(key)
			}
		}
		p.mu.Unlock()
	}
}
