package producers

import (
	"context"
	"log/slog"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// quietWhenGone makes an informer of a custom kind say once, at Info, that its kind is no longer served (its CRD
// deleted), instead of client-go logging "Failed to watch" as an error every 30 s while it retries: the informer
// keeps retrying, and resumes by itself once the CRD is back. Said once per time the kind goes: a kind served
// again (the reflector listed it, so its resource version moved) and then deleted again is said gone again.
// Other watch errors are logged as client-go does. It must be called before the informer runs.
func quietWhenGone(informer cache.SharedIndexInformer, gvr schema.GroupVersionResource, log *slog.Logger) {
	var mu sync.Mutex
	told, toldAt := false, "" // toldAt: the reflector's last synced resource version when it was said
	err := informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		if !apierrors.IsNotFound(err) {
			cache.DefaultWatchErrorHandler(ctx, r, err)
			return
		}
		version := r.LastSyncResourceVersion()
		mu.Lock()
		again := told && toldAt == version
		told, toldAt = true, version
		mu.Unlock()
		if again {
			log.Debug("kind still not served", "resource", gvr.String(), "error", err)
			return
		}
		log.Info("kind no longer served (its CRD deleted?); its watch retries quietly until it is served again",
			"resource", gvr.String(), "error", err)
	})
	if err != nil {
		log.Warn("cannot quiet the watch errors of a kind no longer served", "resource", gvr.String(), "error", err)
	}
}
