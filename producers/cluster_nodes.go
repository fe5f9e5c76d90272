package producers

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/schemas"
)

type podKey struct{ namespace, name string }

func indexPodByNode(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return nil, nil
	}
	return []string{pod.Spec.NodeName}, nil
}

func indexPodUnscheduled(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !podUnscheduled(pod) {
		return nil, nil
	}
	return []string{unscheduledValue}, nil
}

// podTerminal reports a pod that no longer holds its node's resources.
func podTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// podUnscheduled reports a pod waiting for a node: Pending and not bound. A pod bound to a node but still
// Pending (pulling its image) has found its place and says nothing about the cluster's capacity.
func podUnscheduled(pod *corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil &&
		(pod.Status.Phase == corev1.PodPending || pod.Status.Phase == "")
}

func asPod(obj any) *corev1.Pod {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

func asNode(obj any) *corev1.Node {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	node, _ := obj.(*corev1.Node)
	return node
}

func (p *ClusterProducer) addNodeHandlers() error {
	_, err := p.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if node := asNode(obj); node != nil {
				p.mu.Lock()
				delete(p.nodeTombs, node.Name)
				p.mu.Unlock()
				p.enqueueNode(node.Name)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, n := asNode(oldObj), asNode(newObj)
			if o == nil || n == nil {
				return
			}
			// Kubelets rewrite node status every few seconds; only what the placer reads is worth an event.
			if !reflect.DeepEqual(nodeFacts(o), nodeFacts(n)) {
				p.enqueueNode(n.Name)
			}
		},
		DeleteFunc: func(obj any) {
			node := asNode(obj)
			if node == nil {
				return
			}
			p.mu.Lock()
			p.nodeTombs[node.Name] = string(node.UID)
			p.mu.Unlock()
			p.nodeQueue.Add(node.Name)
		},
	})
	if err != nil {
		return fmt.Errorf("cluster %s: watch nodes: %w", p.Cluster, err)
	}
	return nil
}

// queueMissedNodeDeletions queues the deletion of every node the streams' state holds that the cluster no
// longer has (see KnownNodes). The deleted node's uid is not known then, so its deletion's id has none; every
// replica computes the same.
func (p *ClusterProducer) queueMissedNodeDeletions(ctx context.Context) {
	if p.KnownNodes == nil {
		return
	}
	known, err := p.KnownNodes(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.Log.Warn("cannot read the nodes the streams hold; nodes removed while no producer ran are not published deleted",
				"error", err)
		}
		return
	}
	var missed []string
	for _, name := range known {
		if _, exists, err := p.nodeInformer.GetStore().GetByKey(name); err != nil || exists {
			continue
		}
		// Added after the informer listed, its watch event still on the way, while another replica published
		// it: the cluster itself says whether it is gone.
		_, err := p.Clients.Core.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			p.Log.Warn("cannot tell whether a node the streams hold is gone; it is not published deleted", "node", name, "error", err)
			continue
		}
		missed = append(missed, name)
	}
	if len(missed) == 0 {
		return
	}
	p.mu.Lock()
	for _, name := range missed {
		if _, tomb := p.nodeTombs[name]; !tomb {
			p.nodeTombs[name] = ""
		}
	}
	p.mu.Unlock()
	for _, name := range missed {
		p.nodeQueue.Add(name)
	}
	p.Log.Info("publishing the deletion of nodes removed while no producer ran", "nodes", len(missed))
}

func (p *ClusterProducer) addPodHandlers() error {
	_, err := p.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				p.podChanged(nil, pod, false)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if o, n := asPod(oldObj), asPod(newObj); o != nil && n != nil {
				p.podChanged(o, n, false)
			}
		},
		DeleteFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				p.podChanged(pod, pod, true)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("cluster %s: watch pods: %w", p.Cluster, err)
	}
	return nil
}

// podChanged routes a pod change to the node whose capacity it touches and, when the pod is or was
// waiting for a node, to the pod queue that finds its workload.
func (p *ClusterProducer) podChanged(old, pod *corev1.Pod, deleted bool) {
	switch {
	case old == nil || deleted:
		if pod.Spec.NodeName != "" {
			p.enqueueNode(pod.Spec.NodeName)
		}
	case old.Spec.NodeName != pod.Spec.NodeName:
		if old.Spec.NodeName != "" {
			p.enqueueNode(old.Spec.NodeName)
		}
		if pod.Spec.NodeName != "" {
			p.enqueueNode(pod.Spec.NodeName)
		}
	case pod.Spec.NodeName != "" && podCapacityChanged(old, pod):
		p.enqueueNode(pod.Spec.NodeName)
	}
	wasWaiting := old != nil && podUnscheduled(old)
	isWaiting := !deleted && podUnscheduled(pod)
	if wasWaiting || isWaiting {
		if old == nil || deleted || wasWaiting != isWaiting {
			key := podKey{namespace: pod.Namespace, name: pod.Name}
			p.mu.Lock()
			p.podLatest[key] = pod
			p.mu.Unlock()
			p.podQueue.AddAfter(key, p.CoalesceWindow)
		}
	}
}

// podCapacityChanged reports a change of what a bound pod contributes to its node's state.
func podCapacityChanged(old, pod *corev1.Pod) bool {
	return podTerminal(old) != podTerminal(pod) ||
		!reflect.DeepEqual(old.Labels[schemas.LabelWorkloadUID], pod.Labels[schemas.LabelWorkloadUID]) ||
		!reflect.DeepEqual(old.OwnerReferences, pod.OwnerReferences) ||
		!reflect.DeepEqual(karta.EffectivePodRequests(&old.Spec), karta.EffectivePodRequests(&pod.Spec))
}

// enqueueNode schedules a recomputation of node after the coalescing window. The queue keeps one entry
// per node, so every change within the window is covered by a single event.
func (p *ClusterProducer) enqueueNode(name string) { p.nodeQueue.AddAfter(name, p.CoalesceWindow) }

func (p *ClusterProducer) processNode(ctx context.Context) bool {
	name, shutdown := p.nodeQueue.Get()
	if shutdown {
		return false
	}
	defer p.nodeQueue.Done(name)
	if err := p.publishNode(ctx, name); err != nil {
		if ctx.Err() != nil {
			return true
		}
		p.Log.Warn("publishing node state failed; will retry", "node", name, "error", err)
		p.nodeQueue.AddRateLimited(name)
		return true
	}
	p.nodeQueue.Forget(name)
	return true
}

func (p *ClusterProducer) publishNode(ctx context.Context, name string) error {
	subject := schemas.NodeSubject(p.Cluster, name)
	identity := p.Cluster + "/" + name
	item, exists, err := p.nodeInformer.GetStore().GetByKey(name)
	if err != nil {
		return fmt.Errorf("read node cache: %w", err)
	}
	if !exists {
		p.mu.Lock()
		uid, deleted := p.nodeTombs[name]
		p.mu.Unlock()
		if !deleted {
			return nil
		}
		payload := &schemas.NodeDeleted{Cluster: p.Cluster, Name: name}
		if err := p.publisher.publish(ctx, schemas.TypeNodeDeleted, subject, "node-deleted", identity+"/"+uid, payload); err != nil {
			return err
		}
		p.publisher.markGone(subject)
		p.mu.Lock()
		if p.nodeTombs[name] == uid {
			delete(p.nodeTombs, name)
		}
		p.mu.Unlock()
		return nil
	}
	state, err := p.nodeState(ctx, item.(*corev1.Node))
	if err != nil {
		return err
	}
	return p.publisher.publish(ctx, schemas.TypeNodeChanged, subject, "node", identity, state)
}

// nodeFacts are the parts of a node the placer reads.
type nodeFactsView struct {
	Labels        map[string]string
	Taints        []corev1.Taint
	Allocatable   corev1.ResourceList
	Unschedulable bool
	Ready         bool
}

func nodeFacts(node *corev1.Node) nodeFactsView {
	return nodeFactsView{
		Labels:        node.Labels,
		Taints:        node.Spec.Taints,
		Allocatable:   nodeAllocatable(node),
		Unschedulable: node.Spec.Unschedulable,
		Ready:         nodeReady(node),
	}
}

// nodeAllocatable is status.allocatable, or status.capacity for a node whose kubelet reports no
// allocatable (what the scheduler assumes too).
func nodeAllocatable(node *corev1.Node) corev1.ResourceList {
	if len(node.Status.Allocatable) > 0 {
		return node.Status.Allocatable
	}
	return node.Status.Capacity
}

// nodeReady is false when the node's Ready condition says False or Unknown, as the node lifecycle controller
// would then taint it. A node with no Ready condition at all is ready: kube-scheduler goes by taints, not
// conditions, and a kubelet registers its node tainted not-ready until it reports, so a node without
// conditions is one no kubelet reports for (a fleet of Node objects that only carry capacity), which takes pods.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return true
}

// nodeState sums what the non-terminal pods bound to node request, counts them, and attributes them to
// placed workloads.
func (p *ClusterProducer) nodeState(ctx context.Context, node *corev1.Node) (*schemas.NodeState, error) {
	pods, err := p.podInformer.GetIndexer().ByIndex(podIndexNode, node.Name)
	if err != nil {
		return nil, fmt.Errorf("pods of node %s: %w", node.Name, err)
	}
	// A sum takes the format (1Gi or 1073741824) of its first term; summing in a fixed order gives equal
	// JSON, and so equal content ids, in every replica and every recomputation.
	slices.SortFunc(pods, func(a, b any) int {
		pa, pb := a.(*corev1.Pod), b.(*corev1.Pod)
		return cmp.Or(cmp.Compare(pa.Namespace, pb.Namespace), cmp.Compare(pa.Name, pb.Name))
	})
	requested := corev1.ResourceList{}
	workloadPods := map[string]int{}
	workloadRequested := map[string]corev1.ResourceList{}
	count := 0
	for _, obj := range pods {
		pod := obj.(*corev1.Pod)
		if podTerminal(pod) {
			continue
		}
		count++
		podRequests := karta.EffectivePodRequests(&pod.Spec)
		addResources(requested, podRequests)
		uid, err := p.owners.workloadOf(ctx, pod)
		if err != nil {
			return nil, fmt.Errorf("workload of pod %s/%s on node %s: %w", pod.Namespace, pod.Name, node.Name, err)
		}
		if uid != "" {
			workloadPods[uid]++
			if workloadRequested[uid] == nil {
				workloadRequested[uid] = corev1.ResourceList{}
			}
			addResources(workloadRequested[uid], podRequests)
		}
	}
	facts := nodeFacts(node)
	state := &schemas.NodeState{
		Cluster:       p.Cluster,
		Name:          node.Name,
		UID:           string(node.UID),
		Labels:        facts.Labels,
		Taints:        facts.Taints,
		Allocatable:   canonicalResources(facts.Allocatable),
		Requested:     canonicalResources(requested),
		Unschedulable: facts.Unschedulable,
		Ready:         facts.Ready,
		Pods:          count,
	}
	if state.Allocatable == nil {
		state.Allocatable = corev1.ResourceList{}
	}
	if len(workloadPods) > 0 {
		state.WorkloadPods = workloadPods
		for uid, list := range workloadRequested {
			if list = canonicalResources(list); list != nil {
				if state.WorkloadRequested == nil {
					state.WorkloadRequested = map[string]corev1.ResourceList{}
				}
				state.WorkloadRequested[uid] = list
			}
		}
	}
	return state, nil
}

func addResources(dst, src corev1.ResourceList) {
	for name, q := range src {
		sum := dst[name]
		sum.Add(q)
		dst[name] = sum
	}
}

// canonicalResources drops zero quantities. Quantities marshal in canonical form, so equal amounts
// ("1000m" and "1") give equal JSON and therefore equal content ids.
func canonicalResources(in corev1.ResourceList) corev1.ResourceList {
	if len(in) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for name, q := range in {
		if q.IsZero() {
			continue
		}
		out[name] = q.DeepCopy()
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
