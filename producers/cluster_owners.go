package producers

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/schemas"
)

// maxOwnerDepth bounds the owner walk; real chains are short (Deployment, ReplicaSet, Pod) and a longer
// one is more likely a loop than a workload.
const maxOwnerDepth = 8

// maxOwnerCache bounds the owner cache; past it the cache starts over rather than grow without end.
const maxOwnerCache = 100_000

// ownerResolver maps a pod to the control-plane workload it belongs to: the workload uid label on the pod
// itself, or on the first object up its owner chain that carries it. Operators copy labels unevenly (a
// Deployment's pods do not carry the Deployment's labels), so the chain is walked by reading the owners.
// An owner's uid never changes meaning, so the answer per owner uid is cached, also when it is "none".
type ownerResolver struct {
	clients *kube.Clients

	mu    sync.Mutex
	cache map[types.UID]string // owner uid -> workload uid, "" for none
}

func newOwnerResolver(clients *kube.Clients) *ownerResolver {
	return &ownerResolver{clients: clients, cache: map[types.UID]string{}}
}

// workloadOf returns the workload uid of pod, "" when it belongs to no placed workload. An error means the
// answer is unknown for now (the apiserver did not answer) and the caller should retry.
func (r *ownerResolver) workloadOf(ctx context.Context, pod *corev1.Pod) (string, error) {
	if uid := pod.Labels[schemas.LabelWorkloadUID]; uid != "" {
		return uid, nil
	}
	uid, _, err := r.fromOwners(ctx, pod.Namespace, pod.OwnerReferences, 0)
	return uid, err
}

// fromOwners walks owners; settled is false when the answer "none" rests on an owner that could not be
// read (gone, forbidden, kind not served), so it must not be cached.
func (r *ownerResolver) fromOwners(ctx context.Context, namespace string, owners []metav1.OwnerReference, depth int) (uid string, settled bool, err error) {
	if depth >= maxOwnerDepth {
		return "", true, nil
	}
	// The controller decides what the object belongs to; other owners are only looked at after it.
	ordered := make([]metav1.OwnerReference, 0, len(owners))
	for _, o := range owners {
		if o.Controller != nil && *o.Controller {
			ordered = append([]metav1.OwnerReference{o}, ordered...)
		} else {
			ordered = append(ordered, o)
		}
	}
	settled = true
	for _, owner := range ordered {
		uid, ownerSettled, err := r.fromOwner(ctx, namespace, owner, depth)
		if err != nil || uid != "" {
			return uid, true, err
		}
		settled = settled && ownerSettled
	}
	return "", settled, nil
}

func (r *ownerResolver) fromOwner(ctx context.Context, namespace string, owner metav1.OwnerReference, depth int) (string, bool, error) {
	r.mu.Lock()
	uid, known := r.cache[owner.UID]
	r.mu.Unlock()
	if known {
		return uid, true, nil
	}
	object, err := r.getOwner(ctx, namespace, owner)
	if err != nil {
		return "", false, err
	}
	if object == nil {
		// Gone, replaced, forbidden or of a kind not served: no workload for now, but not settled, since a
		// missing owner may still appear.
		return "", false, nil
	}
	settled := true
	uid = object.GetLabels()[schemas.LabelWorkloadUID]
	if uid == "" {
		if uid, settled, err = r.fromOwners(ctx, namespace, object.GetOwnerReferences(), depth+1); err != nil {
			return "", false, err
		}
	}
	if settled {
		r.mu.Lock()
		if len(r.cache) >= maxOwnerCache {
			r.cache = map[types.UID]string{}
		}
		r.cache[owner.UID] = uid
		r.mu.Unlock()
	}
	return uid, settled, nil
}

// getOwner reads the owner's metadata; nil without error when it cannot be read for a lasting reason.
func (r *ownerResolver) getOwner(ctx context.Context, namespace string, owner metav1.OwnerReference) (metav1.Object, error) {
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return nil, nil
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: owner.Kind}
	mapping, err := r.clients.Mapper.RESTMapping(gk, gv.Version)
	if err != nil && kube.IsNoMatch(err) {
		r.clients.RefreshMapper()
		mapping, err = r.clients.Mapper.RESTMapping(gk, gv.Version)
	}
	if err != nil {
		if kube.IsNoMatch(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("resolve owner kind %s: %w", gk, err)
	}
	client := r.clients.Dynamic.Resource(mapping.Resource)
	get := client.Get
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		get = client.Namespace(namespace).Get
	}
	object, err := get(ctx, owner.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), apierrors.IsGone(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read owner %s %s/%s: %w", owner.Kind, namespace, owner.Name, err)
	case object.GetUID() != owner.UID:
		return nil, nil // a newer object with the same name; the pod's owner is gone
	}
	return object, nil
}
