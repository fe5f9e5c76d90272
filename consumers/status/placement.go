package status

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/consumers/internal/contract"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

var workloadPlacementResource = schema.GroupVersionResource{Group: v1alpha1.GroupName, Version: "v1alpha1",
	Resource: "workloadplacements"}

// maxPlacementReason bounds each cluster's reason on a WorkloadPlacement: the full text is in the
// fleetflow.io/reasons annotation and the audit.
const maxPlacementReason = 256

// syncedLimit bounds the workloads whose WorkloadPlacement the writer remembers having written.
const syncedLimit = 16384

// syncPlacement writes the WorkloadPlacement of workload, as the workload shows now, with v (the verdict just
// shown, nil for none) and applied (a report just handled, nil for none). It reports whether applied is news
// to the placement: an Apply it did not record yet. A workload no verdict is shown on, and a cluster-scoped one,
// has none.
func (s *StatusWriter) syncPlacement(ctx context.Context, workload *unstructured.Unstructured, v *schemas.PlacementVerdict,
	applied *schemas.PlacementApplied) (bool, error) {
	if workload.GetNamespace() == "" || workload.GetAnnotations()[schemas.AnnotationPlacement] == "" {
		return false, nil
	}
	if v == nil && applied == nil && s.placementSynced(workload) {
		return false, nil
	}
	name := v1alpha1.WorkloadPlacementName(workload.GetName(), workload.GetKind())
	client := s.ControlPlane.Dynamic.Resource(workloadPlacementResource).Namespace(workload.GetNamespace())
	current, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, contract.Classify(fmt.Errorf("read WorkloadPlacement %s/%s: %w", workload.GetNamespace(), name, err))
	}
	var shown v1alpha1.WorkloadPlacement
	if err == nil {
		if convErr := runtime.DefaultUnstructuredConverter.FromUnstructured(current.Object, &shown); convErr != nil {
			return false, bus.Permanent(fmt.Errorf("WorkloadPlacement %s/%s: %w", workload.GetNamespace(), name, convErr))
		}
		if shown.Status.Workload.UID != string(workload.GetUID()) {
			shown.Status = v1alpha1.WorkloadPlacementStatus{} // of an earlier workload of that name
		}
	}
	status, news := placementStatus(workload, &shown.Status, v, applied, s.clusterNames(), time.Now())
	owner := metav1.OwnerReference{APIVersion: workload.GetAPIVersion(), Kind: workload.GetKind(), Name: workload.GetName(),
		UID: workload.GetUID(), Controller: ptr.To(true)}
	if err == nil && sameJSON(shown.Status, status) && slices.ContainsFunc(shown.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.UID == owner.UID
	}) {
		s.rememberSynced(workload)
		return news, nil
	}
	placement := &v1alpha1.WorkloadPlacement{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "WorkloadPlacement"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: workload.GetNamespace(),
			Labels:          map[string]string{schemas.LabelManagedBy: schemas.ManagedByFleetflow},
			OwnerReferences: []metav1.OwnerReference{owner}},
		Status: status,
	}
	if err == nil {
		// Written on the placement as read: the writer's other consumer, or another replica, may have shown a
		// newer state of the workload since.
		placement.ResourceVersion = current.GetResourceVersion()
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(placement)
	if err != nil {
		return false, bus.Permanent(err)
	}
	_, err = client.Apply(ctx, name, &unstructured.Unstructured{Object: content},
		metav1.ApplyOptions{FieldManager: schemas.ManagedByFleetflow, Force: true})
	switch {
	case apierrors.IsConflict(err):
		return false, errStale
	case err != nil:
		return false, contract.Classify(fmt.Errorf("write WorkloadPlacement %s/%s: %w", workload.GetNamespace(), name, err))
	}
	s.rememberSynced(workload)
	return news, nil
}

// placementStatus is the status of a workload's WorkloadPlacement: what its annotations show, the verdict v's
// message and reasons (those of shown when v is nil), the decision shown with when it was first shown, and the
// Apply last carried out on each cluster, with applied. It reports whether applied is newer than the Apply
// shown for its cluster. clusters are the fleet's cluster names, which tell a reason line from the message in
// the fleetflow.io/reasons annotation of a workload shown before WorkloadPlacements existed.
func placementStatus(workload *unstructured.Unstructured, shown *v1alpha1.WorkloadPlacementStatus, v *schemas.PlacementVerdict,
	applied *schemas.PlacementApplied, clusters map[string]bool, now time.Time) (v1alpha1.WorkloadPlacementStatus, bool) {
	a := workload.GetAnnotations()
	out := v1alpha1.WorkloadPlacementStatus{
		Workload: v1alpha1.WorkloadReference{APIVersion: workload.GetAPIVersion(), Kind: workload.GetKind(),
			Name: workload.GetName(), UID: string(workload.GetUID())},
		Verdict:      a[schemas.AnnotationPlacement],
		Policy:       a[schemas.AnnotationPolicy],
		ClusterNames: a[schemas.AnnotationCluster],
		Phase:        a[schemas.AnnotationPhase],
		ApplyError:   a[schemas.AnnotationPlacementError],
		Message:      shown.Message,
		Reasons:      shown.Reasons,
		Applied:      slices.Clone(shown.Applied),
	}
	phases, shares := keyValues(a[schemas.AnnotationClusterPhases]), keyValues(a[schemas.AnnotationClusterReplicas])
	for _, name := range splitList(a[schemas.AnnotationCluster]) {
		c := v1alpha1.PlacedCluster{Name: name, Phase: phases[name]}
		if c.Phase == "" && !strings.Contains(a[schemas.AnnotationCluster], ",") {
			c.Phase = a[schemas.AnnotationPhase]
		}
		if n, err := strconv.ParseInt(shares[name], 10, 32); err == nil {
			c.Replicas = ptr.To(int32(n))
		}
		out.Clusters = append(out.Clusters, c)
	}
	switch {
	case v != nil:
		out.Message, out.Reasons = shorten(v.Message, maxPlacementReason), nil
		for _, c := range slices.Sorted(maps.Keys(v.Reasons)) {
			out.Reasons = append(out.Reasons, v1alpha1.ClusterReason{Cluster: c, Reason: shorten(v.Reasons[c], maxPlacementReason)})
		}
	case shown.LastDecision == nil:
		out.Message, out.Reasons = reasonsOf(a[schemas.AnnotationReasons], clusters)
	}
	if seq := a[schemas.AnnotationVerdictSequence]; seq != "" {
		out.LastDecision = &v1alpha1.DecisionReference{Sequence: seq, Time: ptr.To(metav1.NewTime(now.UTC().Truncate(time.Second)))}
		if shown.LastDecision != nil && shown.LastDecision.Sequence == seq {
			out.LastDecision.Time = shown.LastDecision.Time
		}
	}
	news := false
	if applied != nil && applied.Action == schemas.ActionApply {
		at := slices.IndexFunc(out.Applied, func(d v1alpha1.AppliedDecision) bool { return d.Cluster == applied.Cluster })
		entry := v1alpha1.AppliedDecision{Cluster: applied.Cluster, Sequence: int64(applied.Sequence),
			Time: ptr.To(metav1.NewTime(now.UTC().Truncate(time.Second)))}
		switch {
		case at < 0:
			out.Applied, news = append(out.Applied, entry), true
		case out.Applied[at].Sequence < entry.Sequence:
			out.Applied[at], news = entry, true
		}
		slices.SortFunc(out.Applied, func(x, y v1alpha1.AppliedDecision) int { return strings.Compare(x.Cluster, y.Cluster) })
	}
	return out, news
}

// reasonsOf reads the fleetflow.io/reasons annotation back: the message, then one "cluster: reason" line per
// cluster of clusters.
func reasonsOf(annotation string, clusters map[string]bool) (string, []v1alpha1.ClusterReason) {
	var message []string
	var reasons []v1alpha1.ClusterReason
	for line := range strings.SplitSeq(annotation, "\n") {
		if c, reason, ok := strings.Cut(line, ": "); ok && clusters[c] {
			reasons = append(reasons, v1alpha1.ClusterReason{Cluster: c, Reason: shorten(reason, maxPlacementReason)})
		} else if line != "" {
			message = append(message, line)
		}
	}
	return shorten(strings.Join(message, "; "), maxPlacementReason), reasons
}

// keyValues reads an annotation of comma-separated key=value pairs.
func keyValues(s string) map[string]string {
	out := map[string]string{}
	for _, part := range splitList(s) {
		if k, v, ok := strings.Cut(part, "="); ok {
			out[k] = v
		}
	}
	return out
}

// clusterNames are the clusters the writer knows.
func (s *StatusWriter) clusterNames() map[string]bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]bool, len(s.clusters))
	for name := range s.clusters {
		out[name] = true
	}
	return out
}

// placementSynced reports whether the writer wrote workload's WorkloadPlacement from this very version of it.
func (s *StatusWriter) placementSynced(workload *unstructured.Unstructured) bool {
	if s.synced == nil {
		return false
	}
	rv, ok := s.synced.Get(workload.GetUID())
	return ok && rv == workload.GetResourceVersion()
}

func (s *StatusWriter) rememberSynced(workload *unstructured.Unstructured) {
	if s.synced != nil {
		s.synced.Add(workload.GetUID(), workload.GetResourceVersion())
	}
}

// deletePlacement deletes the WorkloadPlacement of a deleted workload. Its owner reference has the garbage
// collector do so where one runs; a control plane without kube-controller-manager has none.
func (s *StatusWriter) deletePlacement(ctx context.Context, ref schemas.ObjectRef) error {
	if ref.Namespace == "" {
		return nil
	}
	name := v1alpha1.WorkloadPlacementName(ref.Name, ref.Kind)
	client := s.ControlPlane.Dynamic.Resource(workloadPlacementResource).Namespace(ref.Namespace)
	current, err := client.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return contract.Classify(fmt.Errorf("read WorkloadPlacement %s/%s: %w", ref.Namespace, name, err))
	}
	if uid, _, _ := unstructured.NestedString(current.Object, "status", "workload", "uid"); uid != ref.UID {
		return nil // the placement of a workload of that name created since
	}
	uid := current.GetUID()
	err = client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return contract.Classify(fmt.Errorf("delete WorkloadPlacement %s/%s: %w", ref.Namespace, name, err))
	}
	if s.synced != nil {
		s.synced.Remove(types.UID(ref.UID))
	}
	return nil
}

// appliedEvent is the Event of an Apply carried out.
func appliedEvent(p *schemas.PlacementApplied) kubeEvent {
	return kubeEvent{Type: corev1.EventTypeNormal, Reason: ReasonApplied, Action: actionApplying, Cluster: p.Cluster,
		Note: fmt.Sprintf("Applied to cluster %s (decision %d)", p.Cluster, p.Sequence)}
}
