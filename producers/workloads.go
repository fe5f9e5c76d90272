package producers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/schemas"
)

// WorkloadProducer watches workload kinds on the control plane and publishes workload changed and
// deleted events. Changes go through a rate-limited work queue keyed by object, so a burst of updates to
// one object publishes its latest state, and a failed publish is retried rather than lost.
type WorkloadProducer struct {
	Clients   *kube.Clients
	Publisher *bus.Publisher
	Kinds     []schema.GroupVersionKind
	Log       *slog.Logger

	queue      workqueue.TypedRateLimitingInterface[workloadKey]
	mu         sync.Mutex
	informers  map[schema.GroupVersionResource]cache.SharedIndexInformer
	tombstones map[workloadKey]schemas.ObjectRef
}

type workloadKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

// Run watches every kind until ctx is done. A kind that is not served yet (its CRD is missing) is waited
// for, with a log line, rather than failing the producer.
func (p *WorkloadProducer) Run(ctx context.Context) error {
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[workloadKey](),
		workqueue.TypedRateLimitingQueueConfig[workloadKey]{Name: "workloads"})
	p.informers = map[schema.GroupVersionResource]cache.SharedIndexInformer{}
	p.tombstones = map[workloadKey]schemas.ObjectRef{}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(p.Clients.Dynamic, 0)

	var wg sync.WaitGroup
	for _, gvk := range p.Kinds {
		wg.Go(func() { p.watchKind(ctx, factory, gvk) })
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	for p.processNext(ctx) {
	}
	wg.Wait()
	return nil
}

func (p *WorkloadProducer) watchKind(ctx context.Context, factory dynamicinformer.DynamicSharedInformerFactory, gvk schema.GroupVersionKind) {
	log := p.Log.With("kind", gvk.String())
	var gvr schema.GroupVersionResource
	waitingLogged := false
	err := wait.PollUntilContextCancel(ctx, 5*time.Second, true, func(context.Context) (bool, error) {
		mapping, err := p.Clients.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			if kube.IsNoMatch(err) {
				if !waitingLogged {
					log.Info("kind not served on the control plane yet; waiting for its CRD")
					waitingLogged = true
				}
				p.Clients.Mapper.Reset()
				return false, nil
			}
			log.Warn("resolving kind failed; retrying", "error", err)
			return false, nil
		}
		gvr = mapping.Resource
		return true, nil
	})
	if err != nil {
		return
	}
	informer := factory.ForResource(gvr).Informer()
	_, err = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { p.enqueue(gvr, obj) },
		UpdateFunc: func(oldObj, newObj any) {
			if specChanged(oldObj, newObj) {
				p.enqueue(gvr, newObj)
			}
		},
		DeleteFunc: func(obj any) { p.enqueueDeleted(gvr, obj) },
	})
	if err != nil {
		log.Error("cannot watch kind", "error", err)
		return
	}
	p.mu.Lock()
	p.informers[gvr] = informer
	p.mu.Unlock()
	log.Info("watching workloads", "resource", gvr.String())
	informer.Run(ctx.Done())
}

// specChanged ignores status-only updates and bookkeeping: only a change to what would be copied to a
// workload cluster is worth a placement event.
func specChanged(oldObj, newObj any) bool {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if !ok1 || !ok2 {
		return true
	}
	return !reflect.DeepEqual(kube.SanitizeForCopy(o.Object), kube.SanitizeForCopy(n.Object)) ||
		(o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil)
}

func (p *WorkloadProducer) enqueue(gvr schema.GroupVersionResource, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := workloadKey{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	p.mu.Lock()
	delete(p.tombstones, key)
	p.mu.Unlock()
	p.queue.Add(key)
}

func (p *WorkloadProducer) enqueueDeleted(gvr schema.GroupVersionResource, obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	key := workloadKey{gvr: gvr, namespace: u.GetNamespace(), name: u.GetName()}
	p.mu.Lock()
	p.tombstones[key] = schemas.RefOf(u.Object)
	p.mu.Unlock()
	p.queue.Add(key)
}

func (p *WorkloadProducer) processNext(ctx context.Context) bool {
	key, shutdown := p.queue.Get()
	if shutdown {
		return false
	}
	defer p.queue.Done(key)
	if err := p.publish(ctx, key); err != nil {
		if ctx.Err() != nil {
			return true
		}
		p.Log.Warn("publishing workload event failed; will retry",
			"workload", key.namespace+"/"+key.name, "resource", key.gvr.String(), "error", err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

func (p *WorkloadProducer) publish(ctx context.Context, key workloadKey) error {
	p.mu.Lock()
	informer := p.informers[key.gvr]
	tomb, deleted := p.tombstones[key]
	p.mu.Unlock()
	if informer == nil {
		return errors.New("no informer for resource")
	}
	storeKey := key.name
	if key.namespace != "" {
		storeKey = key.namespace + "/" + key.name
	}
	item, exists, err := informer.GetStore().GetByKey(storeKey)
	if err != nil {
		return fmt.Errorf("read informer cache: %w", err)
	}
	if exists {
		u := item.(*unstructured.Unstructured)
		payload := &schemas.WorkloadChanged{Object: u.Object}
		ref := payload.Ref()
		return p.send(ctx, schemas.TypeWorkloadChanged, schemas.WorkloadSubject(ref),
			schemas.WorkloadChangedID(ref, u.GetResourceVersion()), payload)
	}
	if !deleted {
		return nil
	}
	err = p.send(ctx, schemas.TypeWorkloadDeleted, schemas.WorkloadSubject(tomb), schemas.WorkloadDeletedID(tomb),
		&schemas.WorkloadDeleted{Workload: tomb})
	if err == nil {
		p.mu.Lock()
		if p.tombstones[key] == tomb {
			delete(p.tombstones, key)
		}
		p.mu.Unlock()
	}
	return err
}

func (p *WorkloadProducer) send(ctx context.Context, eventType, subject, id string, payload schemas.Payload) error {
	event, err := schemas.NewEvent(eventType, schemas.SourceControlPlaneProducer, subject, id, payload)
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
