package state

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// ErrStalePlan is returned by ApplyPlan when a decision no longer holds on the latest view: the workload changed
// or went away, or a node no longer has room for the pods the decision packed there. The caller re-plans on a
// fresh snapshot.
var ErrStalePlan = errors.New("plan is stale")

// UpsertCluster adds or replaces a cluster.
func (s *Store) UpsertCluster(seq uint64, cluster *structs.Cluster) error {
	if cluster == nil || cluster.Name == "" {
		return errors.New("state: cluster needs a name")
	}
	return s.write(seq, func(w *writeTxn) error {
		c := *cluster
		c.ModifyIndex = seq
		if err := w.insert(TableClusters, &c); err != nil {
			return err
		}
		w.touchCluster(c.Name)
		return nil
	})
}

// touchCluster makes the capacity row pick up the new cluster object without recomputing any node.
func (w *writeTxn) touchCluster(name string) {
	if _, seen := w.dirtyNodes[name]; !seen {
		w.dirty()[name] = map[string]struct{}{}
	}
}

// DeleteCluster removes a cluster with its nodes and the reservations on them. Workloads placed there keep their
// placement until the scheduler moves them.
func (s *Store) DeleteCluster(seq uint64, name string) error {
	return s.write(seq, func(w *writeTxn) error {
		raw, err := w.first(TableClusters, indexID, name)
		if err != nil {
			return err
		}
		if raw != nil {
			if err := w.delete(TableClusters, raw); err != nil {
				return err
			}
		}
		for _, n := range w.nodesOf(name) {
			if err := w.deleteNode(n); err != nil {
				return err
			}
		}
		w.markCluster(name)
		return nil
	})
}

// UpsertNamespace adds or replaces a namespace.
func (s *Store) UpsertNamespace(seq uint64, ns *structs.Namespace) error {
	if ns == nil || ns.Name == "" {
		return errors.New("state: namespace needs a name")
	}
	return s.write(seq, func(w *writeTxn) error {
		n := *ns
		n.ModifyIndex = seq
		return w.insert(TableNamespaces, &n)
	})
}

// DeleteNamespace removes a namespace.
func (s *Store) DeleteNamespace(seq uint64, name string) error {
	return s.deleteByID(seq, TableNamespaces, name)
}

func (s *Store) deleteByID(seq uint64, table, id string) error {
	return s.write(seq, func(w *writeTxn) error {
		raw, err := w.first(table, indexID, id)
		if err != nil || raw == nil {
			return err
		}
		return w.delete(table, raw)
	})
}

// DefaultMaxPods is the pod limit assumed for a node that reports none: the kubelet's default maxPods.
const DefaultMaxPods = 110

// UpsertNodes adds or replaces nodes. A reservation on a node is released when the node reports at least as many
// pods of the reserving workload (by WorkloadLabel) as the reservation holds: from then on the pods count in
// Requested and must not be counted twice.
func (s *Store) UpsertNodes(seq uint64, nodes ...structs.NodeInfo) error {
	return s.write(seq, func(w *writeTxn) error {
		for i := range nodes {
			if err := w.upsertNode(&nodes[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (w *writeTxn) upsertNode(info *structs.NodeInfo) error {
	if info.Cluster == "" || info.Name == "" {
		return fmt.Errorf("state: node %q of cluster %q: cluster and name are required", info.Name, info.Cluster)
	}
	allocatable := info.Allocatable
	if _, ok := allocatable[corev1.ResourcePods]; !ok {
		// Every kubelet advertises a pod limit; a fleet file may leave it out, so assume the kubelet default.
		allocatable = maps.Clone(allocatable)
		if allocatable == nil {
			allocatable = corev1.ResourceList{}
		}
		allocatable[corev1.ResourcePods] = *resource.NewQuantity(DefaultMaxPods, resource.DecimalSI)
	}
	w.resources = w.resources.With(allocatable, info.Requested)
	alloc, requested, err := w.resources.NodeVectors(allocatable, info.Requested)
	if err != nil {
		return fmt.Errorf("state: node %s/%s %w", info.Cluster, info.Name, err)
	}
	var byWorkload map[string]structs.Vector
	for label, list := range info.RequestedByWorkload {
		w.resources = w.resources.With(list)
		v, err := w.resources.Observed(list)
		if err != nil {
			return fmt.Errorf("state: node %s/%s: requested by workload %s: %w", info.Cluster, info.Name, label, err)
		}
		if byWorkload == nil {
			byWorkload = make(map[string]structs.Vector, len(info.RequestedByWorkload))
		}
		byWorkload[label] = v
	}
	node := &structs.Node{Cluster: info.Cluster, Name: info.Name, Labels: structs.NewNodeLabels(info.Labels), Taints: info.Taints,
		Unschedulable: info.Unschedulable, Allocatable: alloc, Requested: requested,
		PodsByWorkload: info.PodsByWorkload, RequestedByWorkload: byWorkload, ModifyIndex: w.seq}
	w.setNode(node.Cluster, node.Name, node)
	if len(node.PodsByWorkload) > 0 {
		reservations, err := w.reservationsOn(node.Cluster, node.Name)
		if err != nil {
			return err
		}
		for _, r := range reservations {
			if on := r.On(node.Cluster, node.Name); on != nil && node.PodsByWorkload[r.WorkloadLabel] >= on.Pods &&
				newPodsRun(on, node.RequestedByWorkload[r.WorkloadLabel]) {
				if err := w.releaseNode(r, node.Cluster, node.Name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// newPodsRun reports whether the pods a reservation announced run on its node, as far as requested (what the
// workload's pods there request now) tells: always for a reservation that took no running pods off, else once
// they request what was packed or more than what was taken off of some resource.
func newPodsRun(on *structs.NodeReservation, requested structs.Vector) bool {
	if on.Packed == nil || on.Packed.FitsIn(requested) {
		return true
	}
	for i, x := range requested {
		if i != structs.ResourcePods && x > on.Credit.Get(i) {
			return true
		}
	}
	return false
}

// DeleteNode removes a node and the reservations on it.
func (s *Store) DeleteNode(seq uint64, cluster, name string) error {
	return s.write(seq, func(w *writeTxn) error {
		node := w.node(cluster, name)
		if node == nil {
			return nil
		}
		return w.deleteNode(node)
	})
}

func (w *writeTxn) deleteNode(node *structs.Node) error {
	w.setNode(node.Cluster, node.Name, nil)
	reservations, err := w.reservationsOn(node.Cluster, node.Name)
	if err != nil {
		return err
	}
	for _, r := range reservations {
		if err := w.releaseNode(r, node.Cluster, node.Name); err != nil {
			return err
		}
	}
	return nil
}

// releaseNode drops one node from a workload's reservation, and the reservation once it holds no node.
func (w *writeTxn) releaseNode(r *structs.Reservation, cluster, node string) error {
	raw, err := w.first(TableWorkloads, indexID, r.WorkloadID)
	if err != nil || raw == nil {
		return err
	}
	wl := raw.(*structs.Workload)
	if wl.Reservation == nil || wl.Reservation.ID != r.ID {
		return nil
	}
	r = wl.Reservation
	kept := make([]structs.NodeReservation, 0, len(r.Nodes))
	for _, n := range r.Nodes {
		if n.Cluster != cluster || n.Node != node {
			kept = append(kept, n)
		} else {
			w.markReserved(cluster, node, r.WorkloadID, n.Request, -1)
		}
	}
	next := *wl
	next.ModifyIndex = w.seq
	next.Reservation = nil
	if len(kept) > 0 {
		reduced := *r
		reduced.Nodes = kept
		reduced.ModifyIndex = w.seq
		next.Reservation = &reduced
	}
	return w.insert(TableWorkloads, &next)
}

// UpsertWorkload adds or replaces a workload from its RI analysis and returns the stored object. The workload
// keeps its current placement; the scheduler decides whether the new generation still fits there.
func (s *Store) UpsertWorkload(seq uint64, info structs.WorkloadInfo) (*structs.Workload, error) {
	if err := checkWorkloadInfo(info); err != nil {
		return nil, err
	}
	var stored *structs.Workload
	err := s.write(seq, func(w *writeTxn) error {
		var err error
		stored, err = w.upsertWorkload(info)
		return err
	})
	return stored, err
}

// UpsertWorkloadAndPlan stores a workload's new version, as UpsertWorkload does, and in the same write the plan
// that schedule makes for it on a view holding that version: one commit instead of two for every workload that
// arrives, which is most of what the placer writes. The view passed to schedule is valid only during the call.
// When schedule fails, or its plan does not apply (ErrStalePlan), nothing is written.
func (s *Store) UpsertWorkloadAndPlan(seq uint64, now time.Time, info structs.WorkloadInfo,
	schedule func(*Snapshot) (*structs.Plan, error)) (*structs.Plan, error) {
	if err := checkWorkloadInfo(info); err != nil {
		return nil, err
	}
	var plan *structs.Plan
	err := s.write(seq, func(w *writeTxn) error {
		if _, err := w.upsertWorkload(info); err != nil {
			return err
		}
		var err error
		if plan, err = schedule(w.view()); err != nil {
			return err
		}
		return w.applyPlan(plan, now)
	})
	if err != nil {
		return nil, err
	}
	return plan, nil
}

// view reads the write as it stands, as a Snapshot of it committed would; the store's lock is held.
func (w *writeTxn) view() *Snapshot {
	return &Snapshot{txn: w.txn, resources: w.resources, capacity: w.capacity, index: max(w.store.latest, w.seq),
		tableIndex: w.tableIndex(), policies: w.store.policies}
}

func checkWorkloadInfo(info structs.WorkloadInfo) error {
	a := info.Analysis
	if a == nil {
		return errors.New("state: workload has no analysis")
	}
	if a.Kind == "" || a.Name == "" {
		return fmt.Errorf("state: workload %s/%s/%s: kind and name are required", a.Kind, a.Namespace, a.Name)
	}
	return nil
}

func (w *writeTxn) upsertWorkload(info structs.WorkloadInfo) (*structs.Workload, error) {
	a, seq := info.Analysis, w.seq
	wl := &structs.Workload{
		ID:         structs.WorkloadID(a.APIVersion, a.Kind, a.Namespace, a.Name),
		APIVersion: a.APIVersion, Group: structs.APIGroup(a.APIVersion), Kind: a.Kind,
		Namespace: a.Namespace, Name: a.Name, Labels: info.Labels, Generation: info.Generation,
		Analysis: a, Avoid: info.Avoid, ModifyIndex: seq,
	}
	lists := make([]corev1.ResourceList, 0, len(a.Components))
	for _, c := range a.Components {
		lists = append(lists, c.PodRequests)
	}
	w.resources = w.resources.With(lists...)
	wl.Demand = make(structs.Vector, w.resources.Len())
	for _, c := range a.Components {
		name := karta.ComponentKey(c.Name, c.Instance)
		if c.Pods < 0 {
			return nil, fmt.Errorf("state: workload %s component %s: negative pod count %d", wl.DisplayName(), name, c.Pods)
		}
		req, err := w.resources.Request(c.PodRequests)
		if err != nil {
			return nil, fmt.Errorf("state: workload %s component %s: %w", wl.DisplayName(), name, err)
		}
		req[structs.ResourcePods] = 1
		nodeName, exclusive, spread, together := "", []string(nil), []structs.SpreadConstraint(nil), []string(nil)
		if c.PodTemplate != nil {
			nodeName = c.PodTemplate.Spec.NodeName
			exclusive = append(hostPortsOf(&c.PodTemplate.Spec), selfAntiAffinityOnNode(c.PodTemplate)...)
			spread, together = selfSpreadConstraints(c.PodTemplate), selfAffinityKeys(c.PodTemplate)
		}
		wl.PodGroups = append(wl.PodGroups, structs.PodGroup{Component: name, Count: c.Pods, Request: req,
			NodeSelector: c.NodeSelector, RequiredNodeAffinity: c.RequiredNodeAffinity, Tolerations: c.Tolerations,
			NodeName: nodeName, NodeExclusive: exclusive, SpreadConstraints: spread, AffinityKeys: together,
			ConstraintKey: constraintKey(&c, nodeName), Scalable: c.Scalable, ReplicasFieldPath: c.ReplicasFieldPath,
			PodTemplatePath: c.PodTemplatePath})
		if i, ok := structs.DemandOverflows(wl.Demand, req, c.Pods); ok {
			return nil, fmt.Errorf("state: workload %s component %s: %d pods asking for %s %s each are more than fleetflow "+
				"counts (%s in all)", wl.DisplayName(), name, c.Pods, w.resources.Quantity(i, req[i]), w.resources.Name(i),
				w.resources.Quantity(i, structs.MaxDemand))
		}
		wl.Demand.AddInPlace(req, c.Pods)
	}
	if err := exclusiveUnits(wl, a.ExclusiveUnits); err != nil {
		return nil, err
	}
	raw, err := w.first(TableWorkloads, indexID, wl.ID)
	if err != nil {
		return nil, err
	}
	if raw != nil {
		wl.Placement = raw.(*structs.Workload).Placement
		wl.Reservation = raw.(*structs.Workload).Reservation
		wl.Kept = raw.(*structs.Workload).Kept
	}
	return wl, w.insert(TableWorkloads, wl)
}

// DeleteWorkload removes a workload and releases its reservations.
func (s *Store) DeleteWorkload(seq uint64, id string) error {
	return s.write(seq, func(w *writeTxn) error {
		raw, err := w.first(TableWorkloads, indexID, id)
		if err != nil || raw == nil {
			return err
		}
		if err := w.delete(TableWorkloads, raw); err != nil {
			return err
		}
		w.releaseWorkload(raw.(*structs.Workload))
		return nil
	})
}

// KeepOn records clusters where a workload placed nowhere still runs (Workload.Kept), as a rebuilding placer
// finds them from the Applies it published. A placed workload, or one the store does not hold, is left as it is.
func (s *Store) KeepOn(seq uint64, workloadID string, clusters []string) error {
	return s.write(seq, func(w *writeTxn) error {
		raw, err := w.first(TableWorkloads, indexID, workloadID)
		if err != nil || raw == nil || raw.(*structs.Workload).Placement != nil {
			return err
		}
		next := *raw.(*structs.Workload)
		next.ModifyIndex = w.seq
		next.Kept = slices.Clone(clusters)
		if err := w.insert(TableWorkloads, &next); err != nil {
			return err
		}
		// What the workload's reservation holds on a cluster it no longer runs on is no copy's room.
		if r := next.Reservation; r != nil {
			var dropped []structs.NodeReservation
			for _, n := range r.Nodes {
				if !slices.Contains(clusters, n.Cluster) {
					dropped = append(dropped, n)
				}
			}
			for _, n := range dropped {
				if err := w.releaseNode(r, n.Cluster, n.Node); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ReleaseReservationOn drops the part of a workload's reservation on one cluster, and reports whether it held
// any: a copy that finished there (completed, or failed before its pods ran) will bring no pods to take the room
// over, which would otherwise stay reserved until the reservation's TTL.
func (s *Store) ReleaseReservationOn(seq uint64, workloadID, cluster string) (bool, error) {
	released := false
	err := s.write(seq, func(w *writeTxn) error {
		raw, err := w.first(TableWorkloads, indexID, workloadID)
		if err != nil || raw == nil {
			return err
		}
		wl := raw.(*structs.Workload)
		if wl.Reservation == nil {
			return nil
		}
		var nodes []string
		for _, n := range wl.Reservation.Nodes {
			if n.Cluster == cluster && !slices.Contains(nodes, n.Node) {
				nodes = append(nodes, n.Node)
			}
		}
		for _, node := range nodes {
			if err := w.releaseNode(wl.Reservation, cluster, node); err != nil {
				return err
			}
		}
		released = len(nodes) > 0
		return nil
	})
	return released, err
}

// releaseWorkload gives back what a workload's reservation holds on its nodes; the caller writes the workload
// without it, or deletes the workload.
func (w *writeTxn) releaseWorkload(wl *structs.Workload) {
	if wl.Reservation == nil {
		return
	}
	for _, n := range wl.Reservation.Nodes {
		w.markReserved(n.Cluster, n.Node, wl.ID, n.Request, -1)
	}
}

// UpsertPolicy adds or replaces a compiled policy.
func (s *Store) UpsertPolicy(seq uint64, p *policy.Policy) error {
	if p == nil || p.Name == "" {
		return errors.New("state: policy needs a name")
	}
	return s.write(seq, func(w *writeTxn) error {
		cp := *p
		cp.ModifyIndex = seq
		return w.insert(TablePolicies, &cp)
	})
}

// DeletePolicy removes a policy.
func (s *Store) DeletePolicy(seq uint64, name string) error {
	return s.deleteByID(seq, TablePolicies, name)
}

// UpsertResourceInterface adds or replaces a ResourceInterface.
func (s *Store) UpsertResourceInterface(seq uint64, ri *structs.ResourceInterface) error {
	if ri == nil || ri.Name == "" || ri.Kind == "" {
		return errors.New("state: ResourceInterface needs a name and a kind")
	}
	return s.write(seq, func(w *writeTxn) error {
		cp := *ri
		cp.ModifyIndex = seq
		return w.insert(TableResourceInterfaces, &cp)
	})
}

// DeleteResourceInterface removes a ResourceInterface.
func (s *Store) DeleteResourceInterface(seq uint64, name string) error {
	return s.deleteByID(seq, TableResourceInterfaces, name)
}

// ApplyPlan records decisions: each decision replaces its workload's reservations and placement. It is the single
// writer that checks a plan against the latest view, so two decisions computed on the same snapshot cannot both
// take the same free capacity: it fails with ErrStalePlan, and applies nothing, when a workload changed since the
// decision or a node lacks room for the pods packed on it. Reservations expire now + ReservationTTL.
func (s *Store) ApplyPlan(seq uint64, now time.Time, plan *structs.Plan) error {
	return s.write(seq, func(w *writeTxn) error { return w.applyPlan(plan, now) })
}

func (w *writeTxn) applyPlan(plan *structs.Plan, now time.Time) error {
	expires := now.Add(w.store.config.ReservationTTL).UnixNano()
	for _, d := range plan.Decisions {
		if err := w.applyDecision(d, now.UnixNano(), expires); err != nil {
			return fmt.Errorf("state: decision %s for %s: %w", d.ID, d.Workload, err)
		}
	}
	// Capacity rows are rebuilt now so the room check below sees every decision of the plan.
	if err := w.rebuildCapacity(); err != nil {
		return err
	}
	w.resetDirty()
	for _, d := range plan.Decisions {
		for _, a := range d.Assignments {
			row := w.capacity.get(a.Cluster)
			if row == nil {
				return fmt.Errorf("%w: cluster %s is gone", ErrStalePlan, a.Cluster)
			}
			if err := checkRoom(row, a.Node); err != nil {
				return fmt.Errorf("decision %s for %s: %w", d.ID, d.Workload, err)
			}
		}
	}
	return nil
}

// checkRoom fails when the reservations on a node exceed what it has left after running pods.
func checkRoom(c *structs.ClusterCapacity, node string) error {
	if nc := c.Node(node); nc != nil {
		for i, r := range nc.Reserved {
			if r > 0 && nc.Node.Allocatable.Get(i)-nc.Node.Requested.Get(i)-r < 0 {
				return fmt.Errorf("%w: node %s/%s is over-committed", ErrStalePlan, c.Name, node)
			}
		}
		return nil
	}
	return fmt.Errorf("%w: node %s/%s is gone", ErrStalePlan, c.Name, node)
}

func (w *writeTxn) applyDecision(d *structs.Decision, decidedAt, expires int64) error {
	raw, err := w.first(TableWorkloads, indexID, d.WorkloadID)
	if err != nil {
		return err
	}
	if raw == nil {
		if d.Status == structs.StatusRemoved {
			return nil
		}
		return fmt.Errorf("%w: workload is gone", ErrStalePlan)
	}
	old := raw.(*structs.Workload)
	if old.Generation != d.Generation {
		return fmt.Errorf("%w: workload is at generation %d, decision was for %d", ErrStalePlan, old.Generation, d.Generation)
	}
	wl := *old
	wl.ModifyIndex = w.seq
	wl.Placement = nil
	switch {
	case d.Status == structs.StatusPlaced:
		w.releaseWorkload(old)
		wl.Placement = &structs.Placement{DecisionID: d.ID, Policy: d.Policy, Generation: d.Generation,
			Clusters: slices.Clone(d.Clusters), Replicas: maps.Clone(d.Replicas), DecidedIndex: w.seq, DecidedAt: decidedAt}
		if d.Pin {
			wl.Placement.Pins = structs.PinsOf(d.Assignments)
		}
		wl.Reservation = w.reserve(d, old, expires)
		wl.Kept = nil
	case d.Status != structs.StatusRemoved && (old.Placement != nil || len(old.Kept) > 0):
		// Placed nowhere now, its copies keep running where it was placed (the placer takes none down), and
		// so does its reservation: the copies' pods are coming to take that room, whatever the verdict says.
		// It goes as any reservation does (the pods reported, its TTL, a copy gone: KeepOn).
		if old.Placement != nil {
			wl.Kept = slices.Clone(old.Placement.Clusters)
		}
	default:
		w.releaseWorkload(old)
		wl.Reservation = nil
	}
	return w.insert(TableWorkloads, &wl)
}

// reserve builds the reservation of a decision's assignments, nil when it has none, and records what it holds.
func (w *writeTxn) reserve(d *structs.Decision, wl *structs.Workload, expires int64) *structs.Reservation {
	if len(d.Assignments) == 0 {
		return nil
	}
	r := &structs.Reservation{ID: d.ID, WorkloadID: wl.ID, WorkloadLabel: structs.WorkloadLabelValue(wl.ID),
		ExpiresAt: expires, ModifyIndex: w.seq}
	for _, a := range d.Assignments {
		on := r.On(a.Cluster, a.Node)
		if on == nil {
			r.Nodes = append(r.Nodes, structs.NodeReservation{Cluster: a.Cluster, Node: a.Node,
				Request: make(structs.Vector, w.resources.Len())})
			on = &r.Nodes[len(r.Nodes)-1]
		}
		on.Pods += a.Pods
		on.Request.AddInPlace(a.PodRequest, a.Pods)
	}
	// The workload's pods already running on a node (a grown workload's old pods) count in its requested
	// resources, so the reservation holds only the rest (Credit is what they took off). It goes once the
	// workload's pods there are as many as packed and its new pods run (newPodsRun): its old pods alone may be
	// as many.
	for i := range r.Nodes {
		on := &r.Nodes[i]
		node := w.node(on.Cluster, on.Node)
		if node == nil {
			continue
		}
		running := node.RequestedByWorkload[r.WorkloadLabel]
		if running == nil {
			continue
		}
		on.Packed, on.Credit = slices.Clone(on.Request), slices.Clone(running)
		for j, x := range running {
			if j < len(on.Request) {
				on.Request[j] = max(0, on.Request[j]-x)
			}
		}
	}
	slices.SortFunc(r.Nodes, func(a, b structs.NodeReservation) int {
		return cmp.Or(strings.Compare(a.Cluster, b.Cluster), strings.Compare(a.Node, b.Node))
	})
	for _, n := range r.Nodes {
		w.markReserved(n.Cluster, n.Node, wl.ID, n.Request, 1)
	}
	// Lowered even if the write aborts: an early bound only costs ExpireReservations a scan.
	w.store.earliestExpiry = min(w.store.earliestExpiry, expires)
	return r
}

// ExpireReservations releases every reservation whose TTL ran out by now and returns how many it released.
// It scans all workloads, and only once the earliest reservation may have run out: it runs on a timer, not per
// decision, so an expiry index would cost every decision an index write to save the timer a scan.
func (s *Store) ExpireReservations(seq uint64, now time.Time) (int, error) {
	released := 0
	earliest, prev, scanned := int64(math.MaxInt64), int64(0), false
	err := s.write(seq, func(w *writeTxn) error {
		if now.UnixNano() < s.earliestExpiry {
			return nil
		}
		all, err := w.all(TableWorkloads, indexID)
		if err != nil {
			return err
		}
		for _, raw := range all {
			wl := raw.(*structs.Workload)
			if wl.Reservation == nil {
				continue
			}
			if wl.Reservation.ExpiresAt > now.UnixNano() {
				earliest = min(earliest, wl.Reservation.ExpiresAt)
				continue
			}
			w.releaseWorkload(wl)
			next := *wl
			next.ModifyIndex = seq
			next.Reservation = nil
			if err := w.insert(TableWorkloads, &next); err != nil {
				return err
			}
			released++
		}
		// The scan saw every reservation, so the bound becomes exact (write holds the store's lock).
		prev, s.earliestExpiry, scanned = s.earliestExpiry, earliest, true
		return nil
	})
	if err != nil && scanned {
		// Nothing was released after all: the bound goes back to one that holds.
		s.mu.Lock()
		s.earliestExpiry = min(s.earliestExpiry, prev)
		s.mu.Unlock()
	}
	return released, err
}

// hostPortsOf lists the host ports a pod of spec takes, as kube-scheduler's NodePorts filter reads them: its
// app containers' hostPorts, and with hostNetwork every containerPort (the API defaults hostPort to it).
func hostPortsOf(spec *corev1.PodSpec) []string {
	var ports []string
	for _, ctr := range spec.Containers {
		for _, port := range ctr.Ports {
			hostPort := port.HostPort
			if hostPort == 0 && spec.HostNetwork {
				hostPort = port.ContainerPort
			}
			if hostPort <= 0 {
				continue
			}
			protocol := port.Protocol
			if protocol == "" {
				protocol = corev1.ProtocolTCP
			}
			ports = append(ports, string(protocol)+"/"+strconv.Itoa(int(hostPort)))
		}
	}
	return ports
}

// selfAntiAffinityOnNode returns an entry per required pod anti-affinity term of the template that keeps its
// pods apart by node (topologyKey kubernetes.io/hostname) and whose selector matches the template's own labels:
// one pod per node, as a training job often asks of its workers. Terms about other pods, or that select pods by
// labels their controller adds (which the template does not show), are not modelled.
func selfAntiAffinityOnNode(template *corev1.PodTemplateSpec) []string {
	affinity := template.Spec.Affinity
	if affinity == nil || affinity.PodAntiAffinity == nil {
		return nil
	}
	var out []string
	for _, term := range affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector == nil || len(term.Namespaces) > 0 || term.NamespaceSelector != nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(template.Labels)) {
			continue
		}
		out = append(out, "anti-affinity/"+selector.String())
	}
	return out
}

// selfSpreadConstraints are the template's hard topology spread constraints that count the pods themselves:
// whenUnsatisfiable DoNotSchedule, and a selector (with the values its matchLabelKeys take from the pod's own
// labels) that the template's labels match. A constraint counting only other pods, which fleetflow does not
// see, is left out, as is a template bound to a node by spec.nodeName, which kube-scheduler never sees.
func selfSpreadConstraints(template *corev1.PodTemplateSpec) []structs.SpreadConstraint {
	if template.Spec.NodeName != "" {
		return nil
	}
	var out []structs.SpreadConstraint
	for _, tsc := range template.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule || tsc.LabelSelector == nil || tsc.TopologyKey == "" || tsc.MaxSkew < 1 {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(tsc.LabelSelector)
		if err != nil || !selector.Matches(labels.Set(template.Labels)) { // {} selects every pod, its own too
			continue
		}
		c := structs.SpreadConstraint{TopologyKey: tsc.TopologyKey, MaxSkew: int64(tsc.MaxSkew), MinDomains: 1,
			TaintsHonored:   tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
			AffinityIgnored: tsc.NodeAffinityPolicy != nil && *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyIgnore}
		if tsc.MinDomains != nil && *tsc.MinDomains > 1 {
			c.MinDomains = int64(*tsc.MinDomains)
		}
		out = append(out, c)
	}
	return out
}

// selfAffinityKeys are the topology keys of the template's required pod affinity terms that select its own
// pods (in its own namespace): kube-scheduler lets the first such pod go anywhere and keeps the others to its
// domain. A term selecting other pods, which fleetflow does not see, is left out.
func selfAffinityKeys(template *corev1.PodTemplateSpec) []string {
	affinity := template.Spec.Affinity
	if affinity == nil || affinity.PodAffinity == nil || template.Spec.NodeName != "" {
		return nil
	}
	var keys []string
	for _, term := range affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if term.TopologyKey == "" || term.LabelSelector == nil || len(term.Namespaces) > 0 || term.NamespaceSelector != nil {
			continue
		}
		selector, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
		if err != nil || !selector.Matches(labels.Set(template.Labels)) || slices.Contains(keys, term.TopologyKey) {
			continue
		}
		keys = append(keys, term.TopologyKey)
	}
	return keys
}

// constraintKey serializes what decides which nodes a component's pods may use (nodeName is its template's
// spec.nodeName); JSON sorts map keys, so equal constraints give equal keys.
func constraintKey(c *karta.ComponentInstance, nodeName string) string {
	if len(c.NodeSelector) == 0 && c.RequiredNodeAffinity == nil && len(c.Tolerations) == 0 && nodeName == "" {
		return ""
	}
	data, err := json.Marshal(struct {
		S map[string]string    `json:"s,omitempty"`
		A *corev1.NodeSelector `json:"a,omitempty"`
		T []corev1.Toleration  `json:"t,omitempty"`
		N string               `json:"n,omitempty"`
	}{c.NodeSelector, c.RequiredNodeAffinity, c.Tolerations, nodeName})
	if err != nil {
		// These types always marshal. Were one not to, a key never used before only costs the memo; an
		// address could be reused by another component and return its answer.
		return fmt.Sprintf("unkeyed-%d", unkeyedConstraints.Add(1))
	}
	return string(data)
}

// unkeyedConstraints numbers constraint sets that could not be keyed, each a key of its own.
var unkeyedConstraints atomic.Uint64

// exclusiveUnits sets the workload's exclusive units from its analysis's, by pod group.
func exclusiveUnits(wl *structs.Workload, units []karta.ExclusiveUnit) error {
	if len(units) == 0 {
		return nil
	}
	byName := make(map[string]int, len(wl.PodGroups))
	for i, g := range wl.PodGroups {
		byName[g.Component] = i
	}
	held := make([]int64, len(wl.PodGroups))
	wl.ExclusiveUnits = make([]structs.ExclusiveUnit, 0, len(units))
	for _, u := range units {
		unit := structs.ExclusiveUnit{TopologyKey: u.TopologyKey, Alone: u.Alone, AllNamespaces: u.AllNamespaces,
			Pods: make([]structs.UnitPods, 0, len(u.Pods))}
		for _, p := range u.Pods {
			name := karta.ComponentKey(p.Component, p.Instance)
			i, ok := byName[name]
			if !ok || p.Pods <= 0 {
				return fmt.Errorf("state: workload %s: an exclusive-topology unit names %d pods of %q, which it does not have",
					wl.DisplayName(), p.Pods, name)
			}
			if held[i] += p.Pods; held[i] > wl.PodGroups[i].Count {
				return fmt.Errorf("state: workload %s: its exclusive-topology units hold %d pods of %q, which has %d",
					wl.DisplayName(), held[i], name, wl.PodGroups[i].Count)
			}
			unit.Pods = append(unit.Pods, structs.UnitPods{Group: i, Count: p.Pods})
		}
		wl.ExclusiveUnits = append(wl.ExclusiveUnits, unit)
	}
	return nil
}
