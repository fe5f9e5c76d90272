package status

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/consumers/internal/contract"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/schemas"
)

var (
	clusterResource           = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"}
	schedulePolicyResource    = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "schedulepolicies"}
	resourceInterfaceResource = schema.GroupVersionResource{Group: "optimization.nvidia.com", Version: "v1alpha1",
		Resource: "resourceinterfaces"}
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
	// accepted is the Accepted condition of the Cluster's spec as last seen, nil while none was: a writer
	// that has not seen the spec since it started leaves the condition on the object as it is.
	accepted *metav1.Condition
	written  string // the last status written, to skip identical writes
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

// Follow keeps the writer's view of the fleet current from an event of schemas.StatusFleetSubjects, which
// every replica of the status writer reads whole: it shows the Cluster statuses the event changes, and puts a
// ResourceInterface in force (or out of it) for mapping phases. The RI's Accepted condition is written by the
// replica that handles the event on the shared consumer (Handle); every replica validates the policies again
// once it knows the RI, as one may have validated a policy applied with the RI before it knew it.
func (s *StatusWriter) Follow(ctx context.Context, d bus.Delivery) error {
	if handled, err := s.handleFleet(ctx, d); handled {
		return err
	}
	switch p := d.Payload.(type) {
	case *schemas.ObjectChanged:
		if d.Event.Type() == schemas.TypeResourceInterfaceChanged {
			_, _ = s.upsertRI(p) // a refused one is logged
			return s.revalidatePolicies(ctx)
		}
	case *schemas.ObjectDeleted:
		if d.Event.Type() == schemas.TypeResourceInterfaceDeleted {
			return s.removeRI(ctx, p.Workload.Name)
		}
	}
	return nil
}

// handleFleet keeps Cluster and SchedulePolicy statuses current. Cluster statuses are written on
// heartbeats, API changes and readiness changes; node changes show at the next heartbeat, which bounds
// the write rate to one per cluster per heartbeat.
func (s *StatusWriter) handleFleet(ctx context.Context, d bus.Delivery) (handled bool, err error) {
	switch p := d.Payload.(type) {
	case *schemas.ClusterHeartbeat:
		if s.deletedClusters[p.Cluster] {
			return true, nil
		}
		c := s.clusterView(p.Cluster)
		if at := schemas.AsStored(p.Time, d.Stored); at.After(c.lastHeartbeat) {
			c.lastHeartbeat = at
		}
		c.ready = s.fresh(c, schemas.AsStored(d.Event.Time(), d.Stored))
		return true, s.writeClusterStatus(ctx, p.Cluster)
	case *schemas.ClusterAPIs:
		if s.deletedClusters[p.Cluster] {
			return true, nil
		}
		c := s.clusterView(p.Cluster)
		c.apis = slices.Sorted(slices.Values(p.APIs))
		return true, s.writeClusterStatus(ctx, p.Cluster)
	case *schemas.NodeState:
		if !s.deletedClusters[p.Cluster] {
			s.clusterView(p.Cluster).nodes[p.Name] = p
		}
		return true, nil
	case *schemas.NodeDeleted:
		if c := s.clusters[p.Cluster]; c != nil {
			delete(c.nodes, p.Name)
		}
		return true, nil
	case *schemas.PlacerTick:
		for _, name := range slices.Sorted(maps.Keys(s.clusters)) {
			c := s.clusters[name]
			if ready := s.fresh(c, schemas.AsStored(p.Time, d.Stored)); ready != c.ready {
				// Changed only once written: a failed write is retried with this tick, and later ticks see the
				// change still to show.
				c.ready = ready
				if err := s.writeClusterStatus(ctx, name); err != nil {
					c.ready = !ready
					return true, err
				}
			}
		}
		return true, nil
	case *schemas.ObjectChanged:
		switch d.Event.Type() {
		case schemas.TypePolicyChanged:
			return true, s.writePolicyStatus(ctx, p)
		case schemas.TypeClusterChanged:
			name := p.Ref().Name
			delete(s.deletedClusters, name) // registered again
			c := s.clusters[name]
			// Not heard from yet (perhaps never: its kubeconfig does not work): shown not Ready rather than with
			// no status at all.
			write := c == nil || c.lastHeartbeat.IsZero()
			c = s.clusterView(name)
			if accepted := clusterAccepted(p); c.accepted == nil || c.accepted.Status != accepted.Status ||
				c.accepted.Message != accepted.Message {
				c.accepted, write = accepted, true
			}
			if write {
				return true, s.writeClusterStatus(ctx, name)
			}
			return true, nil
		}
	case *schemas.ObjectDeleted:
		if d.Event.Type() == schemas.TypeClusterDeleted {
			// Its nodes with it: clusters created for a burst and deleted after would otherwise stay in
			// memory, every node of them, for as long as the writer runs. What its producer still sends
			// until it stops is ignored, until a Cluster of that name is registered again.
			delete(s.clusters, p.Workload.Name)
			if s.deletedClusters == nil {
				s.deletedClusters = map[string]bool{}
			}
			s.deletedClusters[p.Workload.Name] = true
			return true, nil
		}
	}
	return false, nil
}

// Restore takes in what the streams' state holds of the fleet and of the RIs, before the writer's consumers
// start: a consumer resumes after its acknowledgement floor, so a restarted writer would otherwise know
// only the built-in RIs (a user RI's statusMappings lost until the RI changed) and, per cluster, only the
// nodes that changed since (one node showing as the whole cluster). It writes nothing; the next heartbeat
// of each cluster does. stored is when the state stream stored its copy of the event (zero when unknown).
func (s *StatusWriter) Restore(eventType string, payload schemas.Payload, stored time.Time) {
	switch p := payload.(type) {
	case *schemas.ClusterHeartbeat:
		// A heartbeat counts from when it was stored, by the server's clock, as live ones do (schemas.AsStored).
		// The state stream stores its copy when it copies the event, which may be long after (a state stream
		// recreated, or catching up): the event's own time, when earlier, is the closer one, as the placer's
		// rebuild takes it. And stored before now: a heartbeat from a clock running ahead is as old as now at most.
		at := p.Time
		if !stored.IsZero() && (at.IsZero() || stored.Before(at)) {
			at = stored
		}
		if now := time.Now(); at.After(now) {
			at = now
		}
		if c := s.clusterView(p.Cluster); at.After(c.lastHeartbeat) {
			c.lastHeartbeat = at
			// Ready as of now, as the Cluster shows it: the first write may come before the next heartbeat or
			// tick (the cluster's APIs), and would otherwise turn a cluster that beats NotReady until then.
			c.ready = s.fresh(c, time.Now())
		}
	case *schemas.ClusterAPIs:
		s.clusterView(p.Cluster).apis = slices.Sorted(slices.Values(p.APIs))
	case *schemas.NodeState:
		s.clusterView(p.Cluster).nodes[p.Name] = p
	case *schemas.ObjectChanged:
		switch eventType {
		case schemas.TypeResourceInterfaceChanged:
			_, _ = s.upsertRI(p) // its condition was written when it was applied
		case schemas.TypeClusterChanged:
			s.clusterView(p.Ref().Name).accepted = clusterAccepted(p)
		}
	case *schemas.ObjectDeleted:
		switch eventType {
		case schemas.TypeResourceInterfaceDeleted:
			s.mu.Lock()
			s.ris = s.ris.Without(p.Workload.Name)
			s.mu.Unlock()
		case schemas.TypeClusterDeleted:
			delete(s.clusters, p.Workload.Name)
		}
	}
}

// clusterAccepted is the Accepted condition of a Cluster: False with every field its CRD's schema let in though
// it is invalid (a taint an older CRD took), for the placer keeps the cluster out of new placements then.
func clusterAccepted(p *schemas.ObjectChanged) *metav1.Condition {
	accepted := &metav1.Condition{Type: v1alpha1.ClusterConditionAccepted, Status: metav1.ConditionTrue, Reason: "Valid",
		Message: "fleetflow accepted the spec", LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	var cluster v1alpha1.Cluster
	why := ""
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(p.Object, &cluster); err != nil {
		why = fmt.Sprintf("Cluster %s does not decode: %v", p.Ref().Name, err)
	} else {
		why = objects.InvalidCluster(&cluster)
	}
	if why != "" {
		accepted.Status, accepted.Reason = metav1.ConditionFalse, "Invalid"
		accepted.Message = why + "; it takes no new workloads until that is fixed (those on it stay)"
	}
	return accepted
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
			if r == corev1.ResourcePods && n.Pods > 0 {
				continue // counted below, as the placer counts it
			}
			left := free[r]
			left.Sub(q)
			free[r] = left
		}
		if n.Pods > 0 {
			// Every pod bound to the node takes a pod slot, whatever it requests, as the placer counts it.
			left := free[corev1.ResourcePods]
			left.Sub(*resource.NewQuantity(int64(n.Pods), resource.DecimalSI))
			free[corev1.ResourcePods] = left
		}
	}
	ready := metav1.Condition{Type: v1alpha1.ClusterConditionReady, Status: metav1.ConditionFalse,
		Reason: "NoHeartbeat", Message: "no heartbeat from the cluster's producer within the timeout",
		LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	if c.lastHeartbeat.IsZero() {
		ready.Message = "no heartbeat from the cluster's producer yet (the Joined condition says whether fleetflow could start it)"
	}
	if c.ready {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, "Heartbeat", "the cluster's apiserver answers"
	}
	status := v1alpha1.ClusterStatus{Allocatable: allocatable, Free: free, InstalledAPIs: c.apis}
	if !c.lastHeartbeat.IsZero() {
		t := metav1.NewTime(c.lastHeartbeat.UTC().Truncate(time.Second))
		status.LastHeartbeatTime = &t
	}
	var accepted *metav1.Condition
	acceptedIdentity := []string{}
	if c.accepted != nil {
		copied := *c.accepted
		accepted = &copied
		acceptedIdentity = []string{string(accepted.Status), accepted.Message}
	}
	identity, _ := json.Marshal([]any{ready.Status, status.LastHeartbeatTime, allocatable, free, c.apis, acceptedIdentity})
	if string(identity) == c.written {
		return nil
	}
	clusters := s.ControlPlane.Dynamic.Resource(clusterResource)
	return rereadUntilWritten("Cluster "+name, func() error {
		current, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // the cluster is not (or no longer) registered
		}
		if err != nil {
			return fmt.Errorf("read Cluster %s: %w", name, err)
		}
		var existing v1alpha1.Cluster
		var others []metav1.Condition
		wasReady := false
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, &existing); err == nil {
			for _, old := range existing.Status.Conditions {
				switch {
				case old.Type == ready.Type:
					wasReady = old.Status == metav1.ConditionTrue
					if old.Status == ready.Status {
						ready.LastTransitionTime = old.LastTransitionTime
					}
				case accepted != nil && old.Type == accepted.Type:
					if old.Status == accepted.Status {
						accepted.LastTransitionTime = old.LastTransitionTime
					}
				default:
					others = append(others, old) // Joined, written by the cluster manager
				}
			}
		}
		status.Conditions = []metav1.Condition{ready}
		if accepted != nil {
			status.Conditions = append(status.Conditions, *accepted)
		}
		status.Conditions = append(status.Conditions, others...)
		// The rest of the status is replaced, so totals of resources no node has any more, and APIs no longer
		// served, go too.
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
		if err != nil {
			return bus.Permanent(err)
		}
		current.Object["status"] = content
		_, err = clusters.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: schemas.ManagedByFleetflow})
		switch {
		case apierrors.IsConflict(err):
			return errStale
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return contract.Classify(fmt.Errorf("write status of Cluster %s: %w", name, err))
		}
		c.written = string(identity)
		// On a change only: every replica writes Cluster statuses, and the one that finds the change shown
		// (or its write refused as stale) records nothing.
		switch nowReady := ready.Status == metav1.ConditionTrue; {
		case nowReady && !wasReady:
			s.record(objectReference(current), kubeEvent{Type: corev1.EventTypeNormal, Reason: ReasonClusterReady,
				Action: actionHeartbeat, Note: "Cluster " + name + " is Ready: " + ready.Message})
		case !nowReady && wasReady:
			s.record(objectReference(current), kubeEvent{Type: corev1.EventTypeWarning, Reason: ReasonClusterNotReady,
				Action: actionHeartbeat, Note: "Cluster " + name + " is NotReady: " + ready.Message +
					"; its workloads move to clusters that fit"})
		}
		return nil
	})
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
//
// The condition is written on the policy as it is now, and only from an event of its current generation: one
// of an older generation (retried after a failed write while the next went through) would undo the newer
// verdict, and nothing would correct it, since status writes make no new event.
func (s *StatusWriter) writePolicyStatus(ctx context.Context, p *schemas.ObjectChanged) error {
	ref := p.Ref()
	client := s.ControlPlane.Dynamic.Resource(schedulePolicyResource)
	var policies dynamic.ResourceInterface = client
	if ref.Namespace != "" {
		policies = client.Namespace(ref.Namespace)
	}
	return rereadUntilWritten("SchedulePolicy "+ref.Name, func() error {
		current, err := policies.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read SchedulePolicy %s: %w", ref.Name, err)
		}
		if string(current.GetUID()) != ref.UID || current.GetGeneration() > objects.GenerationOf(p.Object) {
			return nil // another policy of that name, or a newer generation whose own event writes its verdict
		}
		return s.writePolicyCondition(ctx, policies, current, p)
	})
}

// kindsWithoutRI lists the kinds a policy names that no RI, built-in or applied, describes, as Kind.group, and
// for those an RI's kind is a likely misspelling of, what was likely meant.
func (s *StatusWriter) kindsWithoutRI(kinds []v1alpha1.GroupKind) (out, hints []string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range kinds {
		if !s.ris.HasGroupKind(k.Group, k.Kind) {
			name := k.Kind
			if k.Group != "" {
				name += "." + k.Group
			}
			out = append(out, name)
			if hint := misspeltKindHint(s.ris, k); hint != "" {
				hints = append(hints, "for "+name+", did you mean "+hint+"?")
			}
		}
	}
	return out, hints
}

// misspeltKindHint names the kind an RI describes that k likely misspells: the same kind in another case or in
// the plural (Kubernetes matches kinds exactly, so such a policy selects nothing), or the same kind in another
// group; "" when none is close.
func misspeltKindHint(ris *karta.Registry, k v1alpha1.GroupKind) string {
	var hints []string
	for _, ri := range ris.All() {
		g := ri.GVK
		switch {
		case g.Group == k.Group && (strings.EqualFold(g.Kind, k.Kind) || strings.EqualFold(g.Kind+"s", k.Kind) ||
			strings.EqualFold(g.Kind+"es", k.Kind)):
			hints = append(hints, "kind "+g.Kind)
		case g.Kind == k.Kind && g.Group != k.Group:
			hints = append(hints, "group "+g.Group)
		}
	}
	slices.Sort(hints)
	if len(hints) == 0 {
		return ""
	}
	return hints[0]
}

// revalidatePolicies writes again the Accepted condition of every SchedulePolicy once the RIs changed: a
// Divide over a kind is valid only while an RI describes the kind, and the RI may come after the policy.
func (s *StatusWriter) revalidatePolicies(ctx context.Context) error {
	client := s.ControlPlane.Dynamic.Resource(schedulePolicyResource)
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		return contract.Classify(fmt.Errorf("list SchedulePolicies: %w", err))
	}
	for i := range list.Items {
		item := &list.Items[i]
		if err := s.writePolicyStatus(ctx, &schemas.ObjectChanged{Object: item.Object}); err != nil {
			return err
		}
	}
	return nil
}

// writePolicyCondition validates the policy of event p and writes the verdict onto current, the policy as read.
func (s *StatusWriter) writePolicyCondition(ctx context.Context, policies dynamic.ResourceInterface,
	current *unstructured.Unstructured, p *schemas.ObjectChanged) error {
	ref := p.Ref()
	var sp v1alpha1.SchedulePolicy
	cond := metav1.Condition{Type: PolicyConditionAccepted, Status: metav1.ConditionTrue, Reason: "Valid",
		Message: "the policy is in force", LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))}
	// The placer keeps placing by the last version of a policy it accepted: an edit it refuses changes nothing.
	const keptInForce = "; the last version accepted, if any, stays in force"
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(p.Object, &sp); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", err.Error()+keptInForce
	} else if _, err := policy.Compile(&sp, s.policyKinds()); err != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "Invalid", err.Error()+keptInForce
	} else if undescribed, hints := s.kindsWithoutRI(sp.Spec.ResourceSelectors.Kinds); len(undescribed) > 0 {
		// Not an error (level 1 copies CRDs, Namespaces, ConfigMaps), but a misspelt kind shows here.
		cond.Message += "; no ResourceInterface describes " + strings.Join(undescribed, ", ") +
			", so those objects are copied as they are and ask nothing of the clusters' capacity"
		if len(hints) > 0 {
			cond.Message += " (" + strings.Join(hints, " ") + ")"
		}
	}
	cond.Message = kube.FitConditionMessage(cond.Message)
	var shown v1alpha1.SchedulePolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, &shown); err != nil {
		return bus.Permanent(fmt.Errorf("SchedulePolicy %s on the control plane: %w", ref.Name, err))
	}
	rejectedAlready := false
	for _, old := range shown.Status.Conditions {
		rejectedAlready = rejectedAlready || (old.Type == cond.Type && old.Status == cond.Status && old.Message == cond.Message)
		if old.Type == cond.Type && old.Status == cond.Status {
			if old.Message == cond.Message && shown.Status.ObservedGeneration == sp.Generation {
				return nil
			}
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.SchedulePolicyStatus{
		ObservedGeneration: sp.Generation, Conditions: []metav1.Condition{cond}})
	if err != nil {
		return bus.Permanent(err)
	}
	withStatus := current.DeepCopy()
	withStatus.Object["status"] = content
	_, err = policies.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{FieldManager: schemas.ManagedByFleetflow})
	if apierrors.IsConflict(err) {
		return errStale
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return contract.Classify(fmt.Errorf("write status of SchedulePolicy %s: %w", ref.Name, err))
	}
	if cond.Status == metav1.ConditionFalse {
		s.Log.Warn("SchedulePolicy rejected", "policy", ref.Name, "reason", cond.Message)
		if err == nil && !rejectedAlready {
			s.record(objectReference(current), kubeEvent{Type: corev1.EventTypeWarning, Reason: ReasonPolicyRejected,
				Action: actionValidating, Note: cond.Message})
		}
	}
	return nil
}

// policyKinds validates policies against the RIs the writer knows now, as the placer does.
func (s *StatusWriter) policyKinds() policy.KindInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return objects.KindInfo(s.ris)
}
