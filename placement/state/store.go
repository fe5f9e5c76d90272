package state

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// DefaultReservationTTL is how long a reservation holds capacity when the cluster never reports its pods.
const DefaultReservationTTL = 5 * time.Minute

// Config tunes a Store.
type Config struct {
	// ReservationTTL defaults to DefaultReservationTTL.
	ReservationTTL time.Duration
}

// Store is the fleet view. Writes are serialized; reads go through Snapshot and never block writes.
// Objects returned by a Snapshot must be treated as constants and never modified.
type Store struct {
	config Config
	db     *memdb.MemDB

	// mu serializes writers and keeps resources and latest consistent with the database root a Snapshot reads.
	mu        sync.Mutex
	resources *structs.ResourceTable
	capacity  *capacityRows
	latest    uint64
	// tableIndex is the latest sequence per table. It lives beside memdb rather than in a table of its own because
	// every decision writes three tables, and a memdb row per table would triple the index writes per decision.
	// It is a value, copied into each snapshot.
	tableIndex tableIndexes
	// policies is every policy sorted by name, read by every cycle; it is rebuilt when a policy is written, which
	// is rare, instead of being collected from memdb per cycle, and replaced, never modified.
	policies []*policy.Policy
	// earliestExpiry is no later than the expiry of any reservation (math.MaxInt64 when none can exist), so
	// ExpireReservations skips its scan of every workload until it is due.
	earliestExpiry int64
}

// NewStore returns an empty fleet view.
func NewStore(config Config) (*Store, error) {
	if config.ReservationTTL <= 0 {
		config.ReservationTTL = DefaultReservationTTL
	}
	db, err := memdb.NewMemDB(schema())
	if err != nil {
		return nil, fmt.Errorf("state: build schema: %w", err)
	}
	return &Store{config: config, db: db, resources: structs.NewResourceTable(), capacity: &capacityRows{},
		earliestExpiry: math.MaxInt64}, nil
}

// Config returns the store's configuration with defaults filled in.
func (s *Store) Config() Config { return s.config }

// Snapshot returns an immutable view of the fleet as of now, in O(1).
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Snapshot{txn: s.db.Txn(false), resources: s.resources, capacity: s.capacity, index: s.latest,
		tableIndex: s.tableIndex, policies: s.policies}
}

// writeTxn is one write: a memdb transaction plus the capacity rows it has to rebuild before commit.
type writeTxn struct {
	store     *Store
	txn       *memdb.Txn
	seq       uint64
	resources *structs.ResourceTable
	capacity  *capacityRows
	// dirtyNodes lists, per cluster, the nodes whose capacity must be recomputed; a nil set means the whole
	// cluster. It and nodeChanges are allocated by the first change, as many writes change no node.
	dirtyNodes map[string]map[string]struct{}
	// nodeChanges holds, per node key, what this write changed about a node's capacity.
	nodeChanges map[string]*nodeChange
	// tables marks the tables written, by tableNumber.
	tables [len(tableNames)]bool
}

// nodeChange is what one write changed about a node's capacity.
type nodeChange struct {
	// reservedDelta is the change in reserved capacity, so a node whose object did not change gets the old
	// capacity adjusted rather than recomputed from every reservation on it.
	reservedDelta structs.Vector
	// reservationOps are the reservations that started or stopped holding capacity on the node, in order.
	reservationOps []reservationOp
	// rebuilt: the node object changed (or went away), so its capacity is recomputed from scratch.
	rebuilt bool
	// node is the node as this write left it when rebuilt, nil when it deleted the node.
	node *structs.Node
}

// change returns what this write changed about a node, nil when nothing.
func (w *writeTxn) change(key string) *nodeChange { return w.nodeChanges[key] }

func (w *writeTxn) changeFor(key string) *nodeChange {
	c := w.nodeChanges[key]
	if c == nil {
		if w.nodeChanges == nil {
			w.nodeChanges = map[string]*nodeChange{}
		}
		c = &nodeChange{}
		w.nodeChanges[key] = c
	}
	return c
}

// tableIndexes is the latest sequence per table, by tableNumber.
type tableIndexes [len(tableNames)]uint64

// tableNames lists every table; a table's position is its tableNumber.
var tableNames = [...]string{TableClusters, TableNamespaces, TableNodes, TableWorkloads, TablePolicies,
	TableResourceInterfaces, TableReservations}

func tableNumber(table string) int {
	for i, name := range tableNames {
		if name == table {
			return i
		}
	}
	return -1
}

// write runs fn in a write transaction stamped with seq and commits it if fn succeeds.
func (s *Store) write(seq uint64, fn func(w *writeTxn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &writeTxn{store: s, txn: s.db.Txn(true), seq: seq, resources: s.resources, capacity: s.capacity}
	defer w.txn.Abort()
	if err := fn(w); err != nil {
		return err
	}
	if err := w.rebuildCapacity(); err != nil {
		return err
	}
	policies := s.policies
	if w.tables[tableNumber(TablePolicies)] {
		raw, err := w.all(TablePolicies, indexID)
		if err != nil {
			return err
		}
		policies = make([]*policy.Policy, len(raw))
		for i, p := range raw {
			policies[i] = p.(*policy.Policy)
		}
	}
	w.txn.Commit()
	s.policies = policies
	s.tableIndex = w.tableIndex()
	s.resources = w.resources
	s.capacity = w.capacity
	s.latest = max(s.latest, seq)
	return nil
}

// tableIndex is the store's latest sequence per table as it is once this write commits.
func (w *writeTxn) tableIndex() tableIndexes {
	tables := w.store.tableIndex
	for i, written := range w.tables {
		if written {
			tables[i] = max(tables[i], w.seq)
		}
	}
	return tables
}

func (w *writeTxn) insert(table string, obj any) error {
	if err := w.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("state: insert into %s: %w", table, err)
	}
	w.markTable(table)
	return nil
}

func (w *writeTxn) markTable(table string) {
	if i := tableNumber(table); i >= 0 {
		w.tables[i] = true
	}
}

func (w *writeTxn) delete(table string, obj any) error {
	if err := w.txn.Delete(table, obj); err != nil {
		return fmt.Errorf("state: delete from %s: %w", table, err)
	}
	w.markTable(table)
	return nil
}

func (w *writeTxn) first(table, index string, args ...any) (any, error) {
	obj, err := w.txn.First(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: read %s by %s: %w", table, index, err)
	}
	return obj, nil
}

func (w *writeTxn) all(table, index string, args ...any) ([]any, error) {
	it, err := w.txn.Get(table, index, args...)
	if err != nil {
		return nil, fmt.Errorf("state: read %s by %s: %w", table, index, err)
	}
	var out []any
	for obj := it.Next(); obj != nil; obj = it.Next() {
		out = append(out, obj)
	}
	return out, nil
}

func (w *writeTxn) resetDirty() {
	w.dirtyNodes = nil
	w.nodeChanges = nil
}

// markReserved records that the reservation of workload id starts (sign 1) or stops (sign -1) holding delta on a
// node.
func (w *writeTxn) markReserved(cluster, node, id string, delta structs.Vector, sign int64) {
	w.markTable(TableReservations)
	w.touchNode(cluster, node)
	c := w.changeFor(structs.NodeID(cluster, node))
	c.reservationOps = append(c.reservationOps, reservationOp{id: id, add: sign > 0})
	if len(c.reservedDelta) < len(delta) {
		c.reservedDelta = slices.Grow(c.reservedDelta, len(delta)-len(c.reservedDelta))[:len(delta)]
	}
	c.reservedDelta.AddInPlace(delta, sign)
}

// setNode records that this write stores node as the node named cluster/name, or deletes that node when node
// is nil: the node's capacity is recomputed from scratch when the capacity rows are rebuilt.
func (w *writeTxn) setNode(cluster, name string, node *structs.Node) {
	c := w.changeFor(structs.NodeID(cluster, name))
	c.rebuilt, c.node = true, node
	w.markTable(TableNodes)
	w.touchNode(cluster, name)
}

// node returns a node as of this write: what the write set, or else what the cluster's capacity row holds.
func (w *writeTxn) node(cluster, name string) *structs.Node {
	if c := w.change(structs.NodeID(cluster, name)); c != nil && c.rebuilt {
		return c.node
	}
	if row := w.capacity.get(cluster); row != nil {
		if nc := row.Node(name); nc != nil {
			return nc.Node
		}
	}
	return nil
}

// clusterNodes is the key prefix of a cluster's nodes. Cluster names hold no "/", so no other cluster's
// nodes share it.
func clusterNodes(cluster string) string { return structs.NodeID(cluster, "") }

// nodesOf returns a cluster's nodes as of this write, sorted by name.
func (w *writeTxn) nodesOf(cluster string) []*structs.Node {
	prefix := clusterNodes(cluster)
	// changed maps the names of the nodes this write set or deleted to the node, nil when deleted.
	changed := map[string]*structs.Node{}
	for key, c := range w.nodeChanges {
		if name, ok := strings.CutPrefix(key, prefix); ok && c.rebuilt {
			changed[name] = c.node
		}
	}
	var out []*structs.Node
	if row := w.capacity.get(cluster); row != nil {
		out = make([]*structs.Node, 0, row.NodeCount+len(changed))
		for nc := range row.All() {
			node, ok := changed[nc.Node.Name]
			if !ok {
				out = append(out, nc.Node)
				continue
			}
			delete(changed, nc.Node.Name)
			if node != nil {
				out = append(out, node)
			}
		}
	}
	added := false
	for _, node := range changed {
		if node != nil {
			out, added = append(out, node), true
		}
	}
	if added {
		slices.SortFunc(out, func(a, b *structs.Node) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

func (w *writeTxn) touchNode(cluster, node string) {
	set, seen := w.dirtyNodes[cluster]
	if seen && set == nil {
		return // the whole cluster is already dirty
	}
	if set == nil {
		set = map[string]struct{}{}
		w.dirty()[cluster] = set
	}
	set[node] = struct{}{}
}

// dirty returns dirtyNodes, allocating it on first use.
func (w *writeTxn) dirty() map[string]map[string]struct{} {
	if w.dirtyNodes == nil {
		w.dirtyNodes = map[string]map[string]struct{}{}
	}
	return w.dirtyNodes
}

func (w *writeTxn) markCluster(cluster string) { w.dirty()[cluster] = nil }
