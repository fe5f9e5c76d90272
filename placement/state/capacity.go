package state

import (
	"slices"
	"strings"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// rebuildCapacity recomputes the capacity rows of the clusters this write touched. Nodes that did not change
// keep their NodeCapacity object, so a snapshot taken earlier still sees the old rows untouched.
func (w *writeTxn) rebuildCapacity() error {
	for cluster, nodes := range w.dirtyNodes {
		if err := w.rebuildClusterCapacity(cluster, nodes); err != nil {
			return err
		}
	}
	return nil
}

func (w *writeTxn) rebuildClusterCapacity(name string, dirty map[string]struct{}) error {
	raw, err := w.first(TableCapacity, indexID, name)
	if err != nil {
		return err
	}
	var old *structs.ClusterCapacity
	if raw != nil {
		old = raw.(*structs.ClusterCapacity)
	}
	rawCluster, err := w.first(TableClusters, indexID, name)
	if err != nil {
		return err
	}
	next := &structs.ClusterCapacity{Name: name, ModifyIndex: w.seq}
	if rawCluster != nil {
		next.Cluster = rawCluster.(*structs.Cluster)
	}

	if dirty == nil || old == nil {
		// Rebuild from the nodes table.
		nodes, err := w.all(TableNodes, indexCluster, name)
		if err != nil {
			return err
		}
		next.Nodes = make([]*structs.NodeCapacity, 0, len(nodes))
		for _, raw := range nodes {
			nc, err := w.nodeCapacity(raw.(*structs.Node))
			if err != nil {
				return err
			}
			next.Nodes = append(next.Nodes, nc)
		}
	} else {
		next.Nodes = slices.Clone(old.Nodes)
		for nodeName := range dirty {
			i, found := slices.BinarySearchFunc(next.Nodes, nodeName, func(nc *structs.NodeCapacity, n string) int {
				return strings.Compare(nc.Node.Name, n)
			})
			raw, err := w.first(TableNodes, indexID, structs.NodeID(name, nodeName))
			if err != nil {
				return err
			}
			switch {
			case raw == nil && found:
				next.Nodes = slices.Delete(next.Nodes, i, i+1)
			case raw != nil:
				nc, err := w.nodeCapacity(raw.(*structs.Node))
				if err != nil {
					return err
				}
				if found {
					next.Nodes[i] = nc
				} else {
					next.Nodes = slices.Insert(next.Nodes, i, nc)
				}
			}
		}
	}
	if next.Cluster == nil && len(next.Nodes) == 0 {
		if old != nil {
			return w.delete(TableCapacity, old)
		}
		return nil
	}
	summarize(next, w.resources.Len())
	return w.insert(TableCapacity, next)
}

func (w *writeTxn) nodeCapacity(node *structs.Node) (*structs.NodeCapacity, error) {
	reservations, err := w.all(TableReservations, indexNode, node.ID())
	if err != nil {
		return nil, err
	}
	n := w.resources.Len()
	nc := &structs.NodeCapacity{Node: node}
	if len(reservations) > 0 {
		nc.Reserved = make(structs.Vector, n)
		for _, raw := range reservations {
			nc.Reserved.AddInPlace(raw.(*structs.Reservation).Request, 1)
		}
	}
	nc.Free = make(structs.Vector, n)
	for i := range nc.Free {
		nc.Free[i] = max(0, node.Allocatable.Get(i)-node.Requested.Get(i)-nc.Reserved.Get(i))
	}
	return nc, nil
}

// summarize fills the sums and maxima over the schedulable nodes; unschedulable nodes offer nothing.
func summarize(c *structs.ClusterCapacity, n int) {
	c.Allocatable = make(structs.Vector, n)
	c.Free = make(structs.Vector, n)
	c.MaxFree = make(structs.Vector, n)
	c.MaxFreeNode = make([]string, n)
	for _, nc := range c.Nodes {
		if nc.Node.Unschedulable {
			continue
		}
		c.Allocatable.AddInPlace(nc.Node.Allocatable, 1)
		for i, free := range nc.Free {
			c.Free[i] += free
			if free > c.MaxFree[i] || c.MaxFreeNode[i] == "" {
				c.MaxFree[i] = free
				c.MaxFreeNode[i] = nc.Node.Name
			}
		}
	}
}
