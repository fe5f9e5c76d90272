package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/schemas"
)

var (
	clusterResource        = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"}
	schedulePolicyResource = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "schedulepolicies"}
)

// PolicyConditionAccepted says whether fleetflow accepted a SchedulePolicy; when it did not, the message
// lists every invalid field with its path.
const PolicyConditionAccepted = "Accepted"

// clusterView is what the status writer knows of one workload cluster, to show on its Cluster object.
type clusterView struct {
	lastHeartbeat time.Time
	apis          []string
	nodes         map[string]*schemas.NodeState
	ready         bool
	written       string // the last status written, to skip identical writes
}

func (s *StatusWriter) clusterView(name string) *clusterView {
	if s.clusters == nil {
		s.clusters = map[string]*clusterView{}
	}
	c := s.clusters[name]
	if c == nil {
		c = &clusterView{nodes: map[string]*schemas.NodeState{}}
		s.clusters[name] = c
	}
	return c
}

// handleFleet keeps Cluster and SchedulePolicy statuses current. Cluster statuses are written on
// heartbeats, API changes and readiness changes; node changes show at the next heartbeat, which bounds
// the write rate to one per cluster per heartbeat.
func (s *StatusWriter) handleFleet(ctx context.Context, d bus.Delivery) (handled bool, err error) {
	switch p := d.Payload.(type) {
	case *schemas.ClusterHeartbeat:
		c := s.clusterView(p.Cluster)
		if p.Time.After(c.lastHeartbeat) {
			c.lastHeartbeat = p.Time
		}
		c.ready = s.fresh(c, d.Event.Time())
		return true, s.writeClusterStatus(ctx, p.Cluster)
	case *schemas.ClusterAPIs:
		c := s.clusterView(p.Cluster)
		c.apis = slices.Sorted(slices.Values(p.APIs))
		return true, s.writeClusterStatus(ctx, p.Cluster)
	case *schemas.NodeState:
		s.clusterView(p.Cluster).nodes[p.Name] = p
		return true, nil
	case *schemas.NodeDeleted:
		delete(s.clusterView(p.Cluster).nodes, p.Name)
		return true, nil
	case *schemas.PlacerTick:
		for _, name := range slices.Sorted(maps.Keys(s.clusters)) {
			c := s.clusters[name]
			if ready := s.fresh(c, p.Time); ready != c.ready {
				c.ready = ready
				if err := s.writeClusterStatus(ctx, name); err != nil {
					return true, err
				}
			}
		}
		return true, nil
	case *schemas.ObjectChanged:
		if d.Event.Type() == schemas.TypePolicyChanged {
			return true, s.writePolicyStatus(ctx, p)
		}
	case *schemas.ObjectDeleted:
		if d.Event.Type() == schemas.TypeClusterDeleted {
			// Its nodes with it: clusters created for a burst and deleted after would otherwise stay in
			// memory, every node of them, for as long as the writer runs.
			delete(s.clusters, p.Workload.Name)
			return true, nil
		}
	}
	return false, nil
}

func (s *StatusWriter) fresh(c *clusterView, now time.Time) bool {
	timeout := s.HeartbeatTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return !c.lastHeartbeat.IsZero() && now.Sub(c.lastHeartbeat) < timeout
}

func (s *StatusWriter) writeClusterStatus(ctx context.Context, name string) error {
	c := s.clusters[name]
	allocatable, free := corev1.ResourceList{}, corev1.ResourceList{}
	for _, n := range c.nodes {
		addResources(allocatable, n.Allocatable)
		if n.Unschedulable || !n.Ready {
			continue
		}
		addResources(free, n.Allocatable)
		for r, q := range n.Requested {
			left := free[r]
			left.Sub(q)
			free[r] = left
		}
	}
	ready := metav1.Condition{Type: v1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse,
		Reason: "NoHeartbeat", Message: "no heartbeat from the cluster's producer within the timeout",
		LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	if c.ready {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, "Heartbeat", "the cluster's apiserver answers"
	}
	status := v1alpha1.ClusterStatus{Allocatable: allocatable, Free: free, InstalledAPIs: c.apis}
	if !c.lastHeartbeat.IsZero() {
		t := metav1.NewTime(c.lastHeartbeat.UTC().Truncate(time.Second))
		status.LastHeartbeatTime = &t
	}
	identity, _ := json.Marshal([]any{ready.Status, status.LastHeartbeatTime, allocatable, free, c.apis})
	if string(identity) == c.written {
		return nil
	}
	current, err := s.ControlPlane.Dynamic.Resource(clusterResource).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // the cluster is not (or no longer) registered
	}
	if err != nil {
		return fmt.Errorf("read Cluster %s: %w", name, err)
	}
	var existing v1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, &existing); err == nil {
		for _, old := range existing.Status.Conditions {
			if old.Type == ready.Type && old.Status == ready.Status {
				ready.LastTransitionTime = old.LastTransitionTime
			}
		}
	}
	status.Conditions = []metav1.Condition{ready}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return bus.Permanent(err)
	}
	_, err = s.ControlPlane.Dynamic.Resource(clusterResource).Patch(ctx, name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return classify(fmt.Errorf("write status of Cluster %s: %w", name, err))
	}
	c.written = string(identity)
	return nil
}

func addResources(into, add corev1.ResourceList) {
	for r, q := range add {
		sum := into[r]
		if sum.IsZero() {
			sum = resource.Quantity{Format: q.Format}
		}
		sum.Add(q)
		into[r] = sum
	}
}

// writePolicyStatus validates a SchedulePolicy as the placer does and records the verdict in its
// Accepted condition, so `kubectl get schedulepolicy -o yaml` shows every invalid field with its path.
func (s *StatusWriter) writePolicyStatus(ctx context.Context, p *schemas.ObjectChanged) error {
	ref := p.Ref()
	var sp v1alpha1.SchedulePolicy
	cond := metav1.Condition{Type: PolicyConditionAccepted, Status: metav1.ConditionTrue, Reason: "Valid",
		Message: "the policy is in force", LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(p.Object, &sp); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", err.Error()
	} else if _, err := policy.Compile(&sp, s.policyKinds()); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", err.Error()
	}
	for _, old := range sp.Status.Conditions {
		if old.Type == cond.Type && old.Status == cond.Status {
			if old.Message == cond.Message && sp.Status.ObservedGeneration == sp.Generation {
				return nil
			}
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": ref.UID},
		"status":   map[string]any{"observedGeneration": sp.Generation, "conditions": []metav1.Condition{cond}},
	})
	if err != nil {
		return bus.Permanent(err)
	}
	client := s.ControlPlane.Dynamic.Resource(schedulePolicyResource)
	if ref.Namespace != "" {
		_, err = client.Namespace(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	} else {
		_, err = client.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return classify(fmt.Errorf("write status of SchedulePolicy %s: %w", ref.Name, err))
	}
	if cond.Status == metav1.ConditionFalse {
		s.Log.Warn("SchedulePolicy rejected", "policy", ref.Name, "reason", cond.Message)
	}
	return nil
}

// policyKinds validates policies against the RIs the writer knows now, as the placer does.
func (s *StatusWriter) policyKinds() policy.KindInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return kindInfo(s.ris)
}
