package schemas

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeState is one workload-cluster node as the placer needs it: what it offers and what running pods
// already use. Requested is summed from the non-terminal pods bound to the node.
type NodeState struct {
	Cluster       string              `json:"cluster"`
	Name          string              `json:"name"`
	UID           string              `json:"uid,omitempty"`
	Labels        map[string]string   `json:"labels,omitempty"`
	Taints        []corev1.Taint      `json:"taints,omitempty"`
	Allocatable   corev1.ResourceList `json:"allocatable"`
	Requested     corev1.ResourceList `json:"requested,omitempty"`
	Unschedulable bool                `json:"unschedulable,omitempty"`
	Ready         bool                `json:"ready"`
	// Pods counts the non-terminal pods bound to the node.
	Pods int `json:"pods"`
	// WorkloadPods counts, per control-plane workload uid, the pods of placed workloads on this node, so
	// the placer can release the reservations those pods now occupy.
	WorkloadPods map[string]int `json:"workloadPods,omitempty"`
	// WorkloadRequested sums, per control-plane workload uid, what those pods request, so the placer can count a
	// placed workload's own pods as room for its next version (a grown CR that still fits where it runs stays).
	WorkloadRequested map[string]corev1.ResourceList `json:"workloadRequested,omitempty"`
}

// Validate implements Payload.
func (p *NodeState) Validate() error {
	var errs []error
	if p.Cluster == "" {
		errs = append(errs, errors.New("cluster: required"))
	}
	if p.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	for _, name := range slices.Sorted(maps.Keys(p.Allocatable)) {
		q := p.Allocatable[name]
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("allocatable.%s: negative quantity %s", name, q.String()))
		}
		if bound := MaxNodeCapacity(name); q.Cmp(bound) > 0 {
			errs = append(errs, fmt.Errorf("allocatable.%s: %s is more than a node can plausibly offer (at most %s)",
				name, q.String(), bound.String()))
		}
	}
	for name, q := range p.Requested {
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("requested.%s: negative quantity %s", name, q.String()))
		}
	}
	if p.Pods < 0 {
		errs = append(errs, errors.New("pods: negative"))
	}
	for _, uid := range slices.Sorted(maps.Keys(p.WorkloadPods)) {
		if n := p.WorkloadPods[uid]; n < 0 {
			errs = append(errs, fmt.Errorf("workloadPods.%s: negative count %d", uid, n))
		}
	}
	for uid, list := range p.WorkloadRequested {
		for name, q := range list {
			if q.Sign() < 0 {
				errs = append(errs, fmt.Errorf("workloadRequested.%s.%s: negative quantity %s", uid, name, q.String()))
			}
		}
	}
	return errors.Join(errs...)
}

// NodeDeleted says a node left a workload cluster.
type NodeDeleted struct {
	Cluster string `json:"cluster"`
	Name    string `json:"name"`
}

// Validate implements Payload.
func (p *NodeDeleted) Validate() error {
	var errs []error
	if p.Cluster == "" {
		errs = append(errs, errors.New("cluster: required"))
	}
	if p.Name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	return errors.Join(errs...)
}

// ClusterHeartbeat says a workload cluster's producer reached its apiserver at Time.
type ClusterHeartbeat struct {
	Cluster string    `json:"cluster"`
	Time    time.Time `json:"time"`
}

// Validate implements Payload.
func (p *ClusterHeartbeat) Validate() error {
	var errs []error
	if p.Cluster == "" {
		errs = append(errs, errors.New("cluster: required"))
	}
	if p.Time.IsZero() {
		errs = append(errs, errors.New("time: required"))
	}
	return errors.Join(errs...)
}

// AsStored is the time fleetflow takes for an event stamped t: when its stream stored it, by the server's clock,
// or t when that is unknown (an event handed over directly). Heartbeats, ticks and every other event are so
// on one clock, whatever the producers' and the placer's: a producer whose clock runs ahead or behind neither
// keeps its silent cluster Ready nor has it turn NotReady while it beats, and reservations age by one clock.
func AsStored(t, stored time.Time) time.Time {
	if stored.IsZero() {
		return t
	}
	return stored
}

// ClusterAPIs lists the kinds a workload cluster serves, as "group/version/Kind" ("v1/Pod" for core).
type ClusterAPIs struct {
	Cluster string   `json:"cluster"`
	APIs    []string `json:"apis"`
}

// Validate implements Payload.
func (p *ClusterAPIs) Validate() error {
	if p.Cluster == "" {
		return errors.New("cluster: required")
	}
	return nil
}

// WorkloadStatus is the state of a placed workload in its workload cluster.
type WorkloadStatus struct {
	Cluster  string    `json:"cluster"`
	Workload ObjectRef `json:"workload"`
	// Status is the object's status in the workload cluster, copied verbatim; with Gone, the last status the
	// copy had, which says whether it had finished before it went.
	Status map[string]any `json:"status,omitempty"`
	// PendingPods counts the workload's pods that are not yet scheduled or running.
	PendingPods int `json:"pendingPods"`
	// PendingSince is when the oldest of those pods was created.
	PendingSince *time.Time `json:"pendingSince,omitempty"`
	// Gone is true when the object no longer exists in the workload cluster.
	Gone bool `json:"gone,omitempty"`
	// Generation is the copy's metadata.generation; SourceGeneration and SourceContent the control-plane
	// generation and content hash it was applied from (AnnotationSourceGeneration, AnnotationSourceContent).
	// 0 and "" when unknown. With them the status writer shows the copy's status.observedGeneration in the
	// control plane's terms.
	Generation       int64  `json:"generation,omitempty"`
	SourceGeneration int64  `json:"sourceGeneration,omitempty"`
	SourceContent    string `json:"sourceContent,omitempty"`
}

// Validate implements Payload.
func (p *WorkloadStatus) Validate() error {
	var errs []error
	if p.Cluster == "" {
		errs = append(errs, errors.New("cluster: required"))
	}
	errs = append(errs, p.Workload.validate("workload", true))
	if p.PendingPods < 0 {
		errs = append(errs, errors.New("pendingPods: negative"))
	}
	if p.Generation < 0 || p.SourceGeneration < 0 {
		errs = append(errs, fmt.Errorf("generation, sourceGeneration: %d, %d, negative", p.Generation, p.SourceGeneration))
	}
	return errors.Join(errs...)
}

// PlacerTick is a tick of the placer's clock.
type PlacerTick struct {
	Time time.Time `json:"time"`
	// Settings are the time-based settings of the placer that published the tick: a replay of the history
	// decides with them, as that placer did. nil in ticks of placers before they were carried.
	Settings *PlacerSettings `json:"settings,omitempty"`
	// Placer names the leadership that published the tick, unique to it: a new name is a placer that took
	// over (a restart, a failover) and rebuilt its view from the state stream, which a replay running one
	// placer throughout does not.
	Placer string `json:"placer,omitempty"`
}

// PlacerSettings are the placer settings its decisions depend on, besides the events.
type PlacerSettings struct {
	HeartbeatTimeout metav1.Duration `json:"heartbeatTimeout"`
	PendingTimeout   metav1.Duration `json:"pendingTimeout"`
	ReservationTTL   metav1.Duration `json:"reservationTTL"`
	FailedApplyRetry metav1.Duration `json:"failedApplyRetry"`
}

// Validate implements Payload.
func (p *PlacerTick) Validate() error {
	if p.Time.IsZero() {
		return errors.New("time: required")
	}
	if s := p.Settings; s != nil {
		for _, f := range []struct {
			name string
			d    time.Duration
		}{{"heartbeatTimeout", s.HeartbeatTimeout.Duration}, {"pendingTimeout", s.PendingTimeout.Duration},
			{"reservationTTL", s.ReservationTTL.Duration}, {"failedApplyRetry", s.FailedApplyRetry.Duration}} {
			if f.d <= 0 {
				return fmt.Errorf("settings.%s: %s, must be positive", f.name, f.d)
			}
		}
	}
	return nil
}
