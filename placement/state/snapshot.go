package state

import (
	"fmt"
	"slices"
	"strings"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Snapshot is an immutable view of the fleet. Its reads never fail on a valid schema; they return
// nil or empty results for missing objects. Returned objects must not be modified.
type Snapshot struct {
	txn        *memdb.Txn
	resources  *structs.ResourceTable
	capacity   *capacityRows
	index      uint64
	tableIndex tableIndexes
	policies   []*policy.Policy
}

// Index is the highest stream sequence applied to the view.
func (s *Snapshot) Index() uint64 { return s.index }

// TableIndex is the latest stream sequence that wrote table, 0 when none did.
func (s *Snapshot) TableIndex(table string) uint64 {
	if i := tableNumber(table); i >= 0 {
		return s.tableIndex[i]
	}
	return 0
}

// Resources is the resource table the view's vectors index.
func (s *Snapshot) Resources() *structs.ResourceTable { return s.resources }

// Cluster returns a cluster by name.
func (s *Snapshot) Cluster(name string) *structs.Cluster {
	c := first[*structs.Cluster](s.txn, TableClusters, indexID, name)
	return c
}

// Clusters returns every cluster, sorted by name.
func (s *Snapshot) Clusters() []*structs.Cluster {
	return all[*structs.Cluster](s.txn, TableClusters, indexID)
}

// Capacity returns a cluster's capacity row.
func (s *Snapshot) Capacity(cluster string) *structs.ClusterCapacity {
	return s.capacity.get(cluster)
}

// Capacities returns the capacity row of every cluster that is registered, sorted by name.
func (s *Snapshot) Capacities() []*structs.ClusterCapacity {
	// The slice is shared by every snapshot of this version: callers must not modify it.
	return s.capacity.registered
}

// Nodes returns a cluster's nodes, sorted by name.
func (s *Snapshot) Nodes(cluster string) []*structs.Node {
	row := s.capacity.get(cluster)
	if row == nil {
		return nil
	}
	out := make([]*structs.Node, 0, row.NodeCount)
	for nc := range row.All() {
		out = append(out, nc.Node)
	}
	return out
}

// Namespace returns a namespace by name.
func (s *Snapshot) Namespace(name string) *structs.Namespace {
	n := first[*structs.Namespace](s.txn, TableNamespaces, indexID, name)
	return n
}

// Workload returns a workload by ID.
func (s *Snapshot) Workload(id string) *structs.Workload {
	w := first[*structs.Workload](s.txn, TableWorkloads, indexID, id)
	return w
}

// Workloads returns every workload, sorted by ID.
func (s *Snapshot) Workloads() []*structs.Workload {
	return all[*structs.Workload](s.txn, TableWorkloads, indexID)
}

// WorkloadsOn returns the workloads placed on a cluster. It scans every workload: it serves cluster events,
// which are rare, and an index would cost every decision one more index write.
func (s *Snapshot) WorkloadsOn(cluster string) []*structs.Workload {
	var out []*structs.Workload
	for _, wl := range s.Workloads() {
		if wl.Placement != nil && slices.Contains(wl.Placement.Clusters, cluster) {
			out = append(out, wl)
		}
	}
	return out
}

// WorkloadsOfKind returns the workloads of a group and kind in a namespace, placed or not, sorted by ID: a range of
// the ID index (structs.WorkloadID), so it reads those workloads alone.
func (s *Snapshot) WorkloadsOfKind(group, kind, namespace string) []*structs.Workload {
	return all[*structs.Workload](s.txn, TableWorkloads, indexID+"_prefix", group+"/"+kind+"/"+namespace+"/")
}

// WorkloadsOfKindInAllNamespaces returns the workloads of a group and kind in every namespace, placed or not, sorted
// by ID: a range of the ID index, as WorkloadsOfKind.
func (s *Snapshot) WorkloadsOfKindInAllNamespaces(group, kind string) []*structs.Workload {
	return all[*structs.Workload](s.txn, TableWorkloads, indexID+"_prefix", group+"/"+kind+"/")
}

// Policies returns every policy, sorted by name.
func (s *Snapshot) Policies() []*policy.Policy {
	// The slice is shared by every snapshot of this version: callers must not modify it.
	return s.policies
}

// Policy returns the policy of a name, nil when there is none.
func (s *Snapshot) Policy(name string) *policy.Policy {
	i, found := slices.BinarySearchFunc(s.policies, name, func(p *policy.Policy, name string) int {
		return strings.Compare(p.Name, name)
	})
	if !found {
		return nil
	}
	return s.policies[i]
}

// ResourceInterfaces returns every ResourceInterface, sorted by name.
func (s *Snapshot) ResourceInterfaces() []*structs.ResourceInterface {
	return all[*structs.ResourceInterface](s.txn, TableResourceInterfaces, indexID)
}

// ResourceInterfacesFor returns the ResourceInterfaces of a kind.
func (s *Snapshot) ResourceInterfacesFor(group, kind string) []*structs.ResourceInterface {
	return all[*structs.ResourceInterface](s.txn, TableResourceInterfaces, indexGroupKind, group+"/"+kind)
}

// ReservationsOf returns a workload's reservations: none, or the one named after the decision that placed it.
func (s *Snapshot) ReservationsOf(workloadID string) []*structs.Reservation {
	wl := s.Workload(workloadID)
	if wl == nil || wl.Reservation == nil {
		return nil
	}
	return []*structs.Reservation{wl.Reservation}
}

// ReservationsOn returns the reservations on a node, sorted by ID.
func (s *Snapshot) ReservationsOn(cluster, node string) []*structs.Reservation {
	row := s.capacity.get(cluster)
	if row == nil {
		return nil
	}
	nc := row.Node(node)
	if nc == nil {
		return nil
	}
	var out []*structs.Reservation
	for _, id := range nc.ReservedBy {
		if wl := s.Workload(id); wl != nil && wl.Reservation != nil && wl.Reservation.On(cluster, node) != nil {
			out = append(out, wl.Reservation)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Reservation) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Reservations returns every reservation, sorted by ID. It scans every workload.
func (s *Snapshot) Reservations() []*structs.Reservation {
	var out []*structs.Reservation
	for _, wl := range s.Workloads() {
		if wl.Reservation != nil {
			out = append(out, wl.Reservation)
		}
	}
	slices.SortFunc(out, func(a, b *structs.Reservation) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// first and all panic only on a programming error (unknown table or index), which the schema tests rule out.
func first[T any](txn *memdb.Txn, table, index string, args ...any) T {
	raw, err := txn.First(table, index, args...)
	if err != nil {
		panic(fmt.Sprintf("state: read %s by %s: %v", table, index, err))
	}
	if raw == nil {
		var zero T
		return zero
	}
	return raw.(T)
}

func all[T any](txn *memdb.Txn, table, index string, args ...any) []T {
	it, err := txn.Get(table, index, args...)
	if err != nil {
		panic(fmt.Sprintf("state: read %s by %s: %v", table, index, err))
	}
	var out []T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(T))
	}
	return out
}
