package kube

import (
	"context"
	"fmt"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/fleetflow/fleetflow/internal/observe"
)

// EventLimits bound the Events a process writes: a burst of thousands of workloads must not flood the
// apiserver. Over the limit an Event is dropped (and counted); the objects' status says the same.
type EventLimits struct {
	// QPS is the sustained rate, in Events per second (default 10).
	QPS float64
	// Burst is how many may go at once after a quiet spell (default 100).
	Burst int
}

func (l EventLimits) withDefaults() EventLimits {
	if l.QPS <= 0 {
		l.QPS = 10
	}
	if l.Burst <= 0 {
		l.Burst = 100
	}
	return l
}

// NewEventRecorder writes events.k8s.io/v1 Events to the cluster of c as reportingController through
// client-go's broadcaster, which folds repeats of one reason on one object into a series (one patch), within
// limits. It records until ctx is done.
func NewEventRecorder(ctx context.Context, c *Clients, reportingController string, limits EventLimits) (events.EventRecorder, error) {
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: c.Core.EventsV1()})
	if err := broadcaster.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, fmt.Errorf("record Events: %w", err)
	}
	go func() {
		<-ctx.Done()
		broadcaster.Shutdown()
	}()
	return LimitEvents(broadcaster.NewRecorder(scheme.Scheme, reportingController), limits), nil
}

// LimitEvents passes Events on to next at most at limits' rate, and drops the others.
func LimitEvents(next events.EventRecorder, limits EventLimits) events.EventRecorder {
	limits = limits.withDefaults()
	return &limitedRecorder{next: next, limiter: rate.NewLimiter(rate.Limit(limits.QPS), limits.Burst)}
}

// limitedRecorder is a token bucket in front of a recorder. It drops rather than waits: the status writer
// must not slow down for Events, and client-go's broadcaster would queue them in goroutines without bound.
type limitedRecorder struct {
	next    events.EventRecorder
	limiter *rate.Limiter
}

func (r *limitedRecorder) Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string,
	args ...any) {
	if !r.limiter.Allow() {
		observe.KubeEvents.WithLabelValues(reason, "dropped").Inc()
		return
	}
	observe.KubeEvents.WithLabelValues(reason, "recorded").Inc()
	r.next.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
