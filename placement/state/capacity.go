package state

import (
	"slices"
	"strings"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// capacityRows is the derived capacity view: one row per cluster, sorted by name. It lives beside memdb, like the
// resource table, because it is rewritten by every decision and a memdb row would cost an index write each time;
// it is replaced, never modified, so a snapshot holding it is unaffected by later writes.
type capacityRows struct {
	rows []*structs.ClusterCapacity
	// registered holds the rows whose cluster is known, which is what the scheduler reads.
	registered []*structs.ClusterCapacity
}

func (c *capacityRows) find(name string) (int, bool) {
	return slices.BinarySearchFunc(c.rows, name, func(r *structs.ClusterCapacity, n string) int {
		return strings.Compare(r.Name, n)
	})
}

func (c *capacityRows) get(name string) *structs.ClusterCapacity {
	if i, ok := c.find(name); ok {
		return c.rows[i]
	}
	return nil
}

func (c *capacityRows) with(row *structs.ClusterCapacity) *capacityRows {
	i, found := c.find(row.Name)
	rows := slices.Clone(c.rows)
	if found {
		rows[i] = row
		if prev := c.rows[i]; (prev.Cluster != nil) == (row.Cluster != nil) {
			// The common write, a decision on a registered cluster, keeps the registered rows in place.
			out := &capacityRows{rows: rows, registered: c.registered}
			if row.Cluster != nil {
				j, _ := slices.BinarySearchFunc(c.registered, row.Name, func(r *structs.ClusterCapacity, n string) int {
					return strings.Compare(r.Name, n)
				})
				out.registered = slices.Clone(c.registered)
				out.registered[j] = row
			}
			return out
		}
	} else {
		rows = slices.Insert(rows, i, row)
	}
	return newCapacityRows(rows)
}

func (c *capacityRows) without(name string) *capacityRows {
	i, found := c.find(name)
	if !found {
		return c
	}
	return newCapacityRows(slices.Delete(slices.Clone(c.rows), i, i+1))
}

func newCapacityRows(rows []*structs.ClusterCapacity) *capacityRows {
	out := &capacityRows{rows: rows, registered: make([]*structs.ClusterCapacity, 0, len(rows))}
	for _, r := range rows {
		if r.Cluster != nil {
			out.registered = append(out.registered, r)
		}
	}
	return out
}

// rebuildCapacity recomputes the capacity rows of the clusters this write touched. Only chunks holding a changed
// node are rebuilt; the others are shared with the previous row, so earlier snapshots keep their view untouched.
func (w *writeTxn) rebuildCapacity() error {
	for cluster, nodes := range w.dirtyNodes {
		if err := w.rebuildClusterCapacity(cluster, nodes); err != nil {
			return err
		}
	}
	return nil
}

func (w *writeTxn) rebuildClusterCapacity(name string, dirty map[string]struct{}) error {
	old := w.capacity.get(name)
	rawCluster, err := w.first(TableClusters, indexID, name)
	if err != nil {
		return err
	}
	next := &structs.ClusterCapacity{Name: name, ModifyIndex: w.seq}
	if rawCluster != nil {
		next.Cluster = rawCluster.(*structs.Cluster)
	}
	n := w.resources.Len()

	if dirty == nil || old == nil {
		nodes := w.nodesOf(name)
		all := make([]*structs.NodeCapacity, 0, len(nodes))
		for _, node := range nodes {
			var prior *structs.NodeCapacity
			if old != nil {
				prior = old.Node(node.Name)
			}
			nc, err := w.nodeCapacity(node, prior)
			if err != nil {
				return err
			}
			all = append(all, nc)
		}
		for chunk := range slices.Chunk(all, structs.ChunkNodes) {
			ch := &structs.NodeChunk{Nodes: chunk}
			ch.Summarize(n)
			next.Chunks = append(next.Chunks, ch)
		}
	} else {
		next.Chunks = slices.Clone(old.Chunks)
		if err := w.updateChunks(next, dirty); err != nil {
			return err
		}
	}
	if next.Cluster == nil && len(next.Chunks) == 0 {
		w.capacity = w.capacity.without(name)
		return nil
	}
	next.Summarize(n)
	w.capacity = w.capacity.with(next)
	return nil
}

// updateChunks applies the changed nodes to copies of the chunks that hold them.
func (w *writeTxn) updateChunks(c *structs.ClusterCapacity, dirty map[string]struct{}) error {
	names := make([]string, 0, len(dirty))
	for name := range dirty {
		names = append(names, name)
	}
	slices.Sort(names)
	// copied maps each chunk copied by this write to the chunk it copies (nil for a new chunk).
	copied := map[*structs.NodeChunk]*structs.NodeChunk{}
	for _, name := range names {
		key := structs.NodeID(c.Name, name)
		var nc *structs.NodeCapacity
		old := c.Node(name)
		if change := w.change(key); old != nil && (change == nil || !change.rebuilt) {
			var delta structs.Vector
			var ops []reservationOp
			if change != nil {
				delta, ops = change.reservedDelta, change.reservationOps
			}
			nc = adjustReserved(old, delta, ops, w.resources.Len())
		} else if node := w.node(c.Name, name); node != nil {
			var err error
			if nc, err = w.nodeCapacity(node, old); err != nil {
				return err
			}
		}
		if len(c.Chunks) == 0 {
			if nc != nil {
				ch := &structs.NodeChunk{Nodes: []*structs.NodeCapacity{nc}}
				c.Chunks = append(c.Chunks, ch)
				copied[ch] = nil
			}
			continue
		}
		ci := c.ChunkFor(name)
		ch := c.Chunks[ci]
		if _, ok := copied[ch]; !ok {
			orig := ch
			ch = &structs.NodeChunk{Nodes: slices.Clone(ch.Nodes)}
			c.Chunks[ci] = ch
			copied[ch] = orig
		}
		j, found := slices.BinarySearchFunc(ch.Nodes, name, structs.CompareNodeName)
		switch {
		case nc == nil && found:
			ch.Nodes = slices.Delete(ch.Nodes, j, j+1)
			if len(ch.Nodes) == 0 {
				// ChunkFor needs every chunk to have a last node.
				c.Chunks = slices.Delete(c.Chunks, ci, ci+1)
			}
		case nc != nil && found:
			ch.Nodes[j] = nc
		case nc != nil:
			ch.Nodes = slices.Insert(ch.Nodes, j, nc)
		}
	}
	n := w.resources.Len()
	out := make([]*structs.NodeChunk, 0, len(c.Chunks)+2)
	for _, ch := range c.Chunks {
		orig, isCopy := copied[ch]
		switch {
		case !isCopy:
			out = append(out, ch)
		case len(ch.Nodes) == 0:
		case len(ch.Nodes) > structs.MaxChunkNodes:
			for part := range slices.Chunk(ch.Nodes, structs.ChunkNodes) {
				split := &structs.NodeChunk{Nodes: part}
				split.Summarize(n)
				out = append(out, split)
			}
		default:
			ch.Summarize(n)
			if orig != nil {
				// A reservation changes a node's capacity, not the node: what was derived from the nodes holds.
				ch.InheritNodeMemos(orig)
			}
			out = append(out, ch)
		}
	}
	c.Chunks = out
	return nil
}

// nodeCapacity computes a node's capacity from scratch: what every reservation on it holds, read from the
// reservations themselves. prior is the node's capacity before this write, nil when it had none; its list of
// reservations, with this write's changes applied, names the reservations to read.
func (w *writeTxn) nodeCapacity(node *structs.Node, prior *structs.NodeCapacity) (*structs.NodeCapacity, error) {
	var ids []string
	if prior != nil {
		ids = prior.ReservedBy
	}
	reservations, err := w.readReservations(node.Cluster, node.Name, applyReservationOps(ids, w.opsOn(node.ID())))
	if err != nil {
		return nil, err
	}
	n := w.resources.Len()
	nc := &structs.NodeCapacity{Node: node}
	if len(reservations) > 0 {
		nc.Reserved = make(structs.Vector, n)
		nc.ReservedBy = make([]string, len(reservations))
		for i, r := range reservations {
			nc.ReservedBy[i] = r.WorkloadID
			nc.Reserved.AddInPlace(r.On(node.Cluster, node.Name).Request, 1)
		}
	}
	nc.Free = make(structs.Vector, n)
	for i := range nc.Free {
		nc.Free[i] = max(0, node.Allocatable.Get(i)-node.Requested.Get(i)-nc.Reserved.Get(i))
	}
	return nc, nil
}

// reservationsOn returns the reservations holding capacity on a node as of this write.
func (w *writeTxn) reservationsOn(cluster, node string) ([]*structs.Reservation, error) {
	var ids []string
	if row := w.capacity.get(cluster); row != nil {
		if nc := row.Node(node); nc != nil {
			ids = nc.ReservedBy
		}
	}
	return w.readReservations(cluster, node, applyReservationOps(ids, w.opsOn(structs.NodeID(cluster, node))))
}

// opsOn returns the reservation changes this write made on a node.
func (w *writeTxn) opsOn(key string) []reservationOp {
	if c := w.change(key); c != nil {
		return c.reservationOps
	}
	return nil
}

// readReservations reads the reservations of the workloads ids that hold something on a node.
func (w *writeTxn) readReservations(cluster, node string, ids []string) ([]*structs.Reservation, error) {
	var out []*structs.Reservation
	for _, id := range ids {
		raw, err := w.first(TableWorkloads, indexID, id)
		if err != nil {
			return nil, err
		}
		if raw == nil {
			continue
		}
		if r := raw.(*structs.Workload).Reservation; r != nil && r.On(cluster, node) != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// reservationOp is a workload's reservation starting (add) or ceasing to hold capacity on a node; id is the
// workload's.
type reservationOp struct {
	id  string
	add bool
}

// applyReservationOps returns the sorted list ids with ops applied in order; ids itself is never modified.
func applyReservationOps(ids []string, ops []reservationOp) []string {
	if len(ops) == 0 {
		return ids
	}
	out := slices.Clone(ids)
	for _, op := range ops {
		i, found := slices.BinarySearch(out, op.id)
		switch {
		case op.add && !found:
			out = slices.Insert(out, i, op.id)
		case !op.add && found:
			out = slices.Delete(out, i, i+1)
		}
	}
	return slices.Clip(out)
}

// adjustReserved returns a copy of nc with delta more reserved and ops applied to its reservations.
func adjustReserved(nc *structs.NodeCapacity, delta structs.Vector, ops []reservationOp, n int) *structs.NodeCapacity {
	next := &structs.NodeCapacity{Node: nc.Node, Reserved: make(structs.Vector, n), Free: make(structs.Vector, n),
		ReservedBy: applyReservationOps(nc.ReservedBy, ops)}
	copy(next.Reserved, nc.Reserved)
	next.Reserved.AddInPlace(delta, 1)
	for i := range next.Free {
		next.Free[i] = max(0, nc.Node.Allocatable.Get(i)-nc.Node.Requested.Get(i)-next.Reserved[i])
	}
	return next
}
