package kube

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Clients are the clients fleetflow needs for one cluster.
type Clients struct {
	Config  *rest.Config
	Core    kubernetes.Interface
	Dynamic dynamic.Interface
	// Mapper resolves kinds to resources; call RefreshMapper on a no-match error, since CRDs come and go.
	Mapper *restmapper.DeferredDiscoveryRESTMapper

	refreshMu   sync.Mutex
	lastRefresh time.Time
}

// mapperRefreshInterval bounds how often discovery is invalidated: many watchers of not-yet-served kinds
// each asking for a refresh would otherwise keep discovery permanently cold for everyone.
const mapperRefreshInterval = 2 * time.Second

// RefreshMapper invalidates cached discovery so a newly served kind resolves, at most once per
// mapperRefreshInterval across all callers.
func (c *Clients) RefreshMapper() {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if time.Since(c.lastRefresh) < mapperRefreshInterval {
		return
	}
	c.lastRefresh = time.Now()
	c.Mapper.Reset()
}

// ResetMapper invalidates cached discovery now, whatever the last refresh: for a caller whose fresh discovery
// just showed kinds the cache may lack (RefreshMapper, skipped within mapperRefreshInterval of another refresh,
// would leave a CRD installed right after another one unresolved).
func (c *Clients) ResetMapper() {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.lastRefresh = time.Now()
	c.Mapper.Reset()
}

// tuneRate keeps bursts of decisions from being throttled client-side to a crawl.
func tuneRate(cfg *rest.Config) { cfg.QPS, cfg.Burst = 200, 400 }

// NewClients builds the clients for cfg.
func NewClients(cfg *rest.Config) (*Clients, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client for %s: %w", cfg.Host, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", cfg.Host, err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for %s: %w", cfg.Host, err)
	}
	return &Clients{
		Config:  cfg,
		Core:    core,
		Dynamic: dyn,
		Mapper:  restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco)),
	}, nil
}

// IsNoMatch reports whether err says a kind is not served (yet), e.g. its CRD is missing.
func IsNoMatch(err error) bool { return meta.IsNoMatchError(err) }

// Ready asks the apiserver's /readyz: one that answers it is done starting, so its discovery lists every kind
// it serves (its CRDs' among them).
func (c *Clients) Ready(ctx context.Context) error {
	if rest := c.Core.Discovery().RESTClient(); rest != nil {
		if err := rest.Get().AbsPath("/readyz").Do(ctx).Error(); err != nil {
			return fmt.Errorf("apiserver readiness: %w", err)
		}
		return nil
	}
	_, err := c.Core.Discovery().ServerVersion() // fake clients have no REST client
	return err
}
