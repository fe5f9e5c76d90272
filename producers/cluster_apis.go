package producers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/fleetflow/fleetflow/schemas"
)

// crdResource is where CustomResourceDefinitions live; a change to one is a hint that the served kinds
// changed.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdFollowUp is the delay of a second discovery after a CRD change: the CRD's watch event can arrive a
// moment before discovery serves (or stops serving) its kind.
const crdFollowUp = 2 * time.Second

// APIString renders gvk the way ClusterAPIs lists it: "group/version/Kind", "v1/Pod" for the core group.
func APIString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + "/" + gvk.Kind
}

// ParseAPI reads one ClusterAPIs entry back into a GroupVersionKind.
func ParseAPI(api string) (schema.GroupVersionKind, error) {
	i := strings.LastIndex(api, "/")
	if i <= 0 || i == len(api)-1 {
		return schema.GroupVersionKind{}, fmt.Errorf("installed API %q: want group/version/Kind or version/Kind", api)
	}
	gv, err := schema.ParseGroupVersion(api[:i])
	if err != nil || gv.Version == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("installed API %q: bad group/version %q", api, api[:i])
	}
	return gv.WithKind(api[i+1:]), nil
}

// KindsFromAPIs parses ClusterAPIs entries, skipping those that do not parse.
func KindsFromAPIs(apis []string) []schema.GroupVersionKind {
	kinds := make([]schema.GroupVersionKind, 0, len(apis))
	for _, api := range apis {
		if gvk, err := ParseAPI(api); err == nil {
			kinds = append(kinds, gvk)
		}
	}
	return sortKinds(kinds)
}

func sortKinds(kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int { return cmp.Compare(APIString(a), APIString(b)) })
	return kinds
}

// DiscoverAPIs lists every kind the cluster serves in every served version, sorted. previous is the
// result of the last call, per group-version; when discovery of some group-versions fails (an aggregated
// API whose backend is down), their kinds are carried over from previous instead of being reported as
// uninstalled. The second result is the new per group-version record for the next call.
func DiscoverAPIs(client discovery.DiscoveryInterface, previous map[string][]string) ([]string, map[string][]string, error) {
	_, lists, err := client.ServerGroupsAndResources()
	var failed map[schema.GroupVersion]error
	if err != nil {
		var partial *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &partial) {
			return nil, nil, fmt.Errorf("discovery: %w", err)
		}
		failed = partial.Groups
	}
	byGV := map[string][]string{}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || r.Kind == "" {
				continue // a subresource, not a kind of its own
			}
			byGV[gv.String()] = append(byGV[gv.String()], APIString(gv.WithKind(r.Kind)))
		}
	}
	for gv := range failed {
		if kept, ok := previous[gv.String()]; ok {
			if _, fresh := byGV[gv.String()]; !fresh {
				byGV[gv.String()] = kept
			}
		}
	}
	var apis []string
	for _, kinds := range byGV {
		apis = append(apis, kinds...)
	}
	slices.Sort(apis)
	return slices.Compact(apis), byGV, nil
}

func (p *ClusterProducer) crdInformer() cache.SharedIndexInformer {
	return dynamicinformer.NewFilteredDynamicInformer(p.Clients.Dynamic, crdResource, metav1.NamespaceAll, 0,
		cache.Indexers{}, nil).Informer()
}

// triggerAPIs asks the APIs loop for a discovery now; triggers while one is pending fold into it.
func (p *ClusterProducer) triggerAPIs() {
	select {
	case p.apisTrigger <- struct{}{}:
	default:
	}
}

// apisLoop publishes the installed APIs at start, on every change found by polling or after a CRD
// change, and keeps the kind watches in line with what the cluster serves.
func (p *ClusterProducer) apisLoop(ctx context.Context) {
	var byGV map[string][]string
	retry := time.NewTimer(0) // the first discovery runs at once
	defer retry.Stop()
	ticker := time.NewTicker(p.APIsResync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-retry.C:
		case <-p.apisTrigger:
			p.Clients.RefreshMapper()
			retry.Reset(crdFollowUp)
		}
		next, err := p.publishAPIs(ctx, byGV)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.Log.Warn("installed APIs not published; will retry", "error", err)
			retry.Reset(time.Second)
			continue
		}
		byGV = next
	}
}

// publishAPIs publishes what the cluster serves, once its apiserver is ready: one starting up serves its CRDs'
// kinds only once it has read them, and discovery before that would have every copy of those kinds reported
// gone, and moved, while it still runs.
func (p *ClusterProducer) publishAPIs(ctx context.Context, previous map[string][]string) (map[string][]string, error) {
	if err := p.Clients.Ready(ctx); err != nil {
		return nil, fmt.Errorf("the apiserver is not ready, so its discovery may lack kinds it serves: %w", err)
	}
	apis, byGV, err := DiscoverAPIs(p.Clients.Core.Discovery(), previous)
	if err != nil {
		return nil, err
	}
	// Ready again after discovery: an apiserver that restarted while it was being read answered part of it as
	// a starting one.
	if err := p.Clients.Ready(ctx); err != nil {
		return nil, fmt.Errorf("the apiserver is not ready, so its discovery may lack kinds it serves: %w", err)
	}
	served := make(map[string]bool, len(apis))
	for _, api := range apis {
		served[api] = true
	}
	p.mu.Lock()
	gained := false
	for api := range served {
		if !p.served[api] {
			gained = true
			break
		}
	}
	p.served = served
	p.mu.Unlock()
	if gained {
		// The mapper's cached discovery may predate a kind this discovery found (the refresh on a CRD's event is
		// skipped within two seconds of another, as when several CRDs are installed together): its watch would
		// fail to resolve the kind, with a warning, until the next discovery.
		p.Clients.ResetMapper()
	}
	p.ensureKindWatches()

	if apis == nil {
		apis = []string{}
	}
	payload := &schemas.ClusterAPIs{Cluster: p.Cluster, APIs: apis}
	if err := p.publisher.publish(ctx, schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject(p.Cluster),
		"apis", p.Cluster, payload); err != nil {
		return nil, err
	}
	return byGV, nil
}
