package state

import (
	"fmt"
	"maps"
	"slices"
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
	// It is replaced, never modified, so snapshots can share it.
	tableIndex map[string]uint64
	// policies is every policy sorted by name, read by every cycle; it is rebuilt when a policy is written, which
	// is rare, instead of being collected from memdb per cycle, and replaced, never modified.
	policies []*policy.Policy
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
	return &Store{config: config, db: db, resources: structs.NewResourceTable(), capacity: &capacityRows{}}, nil
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
	// dirtyNodes lists, per cluster, the nodes whose capacity must be recomputed; a nil set means the whole cluster.
	dirtyNodes map[string]map[string]struct{}
	// reservedDelta holds, per node key, the change in reserved capacity of a node whose object did not change,
	// so its capacity is the old one adjusted rather than recomputed from every reservation on it.
	reservedDelta map[string]structs.Vector
	// reservationOps holds, per node key, the reservations that started or stopped holding capacity on the node,
	// in order, to apply to its list of reservations.
	reservationOps map[string][]reservationOp
	// rebuilt marks node keys whose node object changed and must be recomputed from scratch.
	rebuilt map[string]bool
	tables  map[string]struct{}
}

// write runs fn in a write transaction stamped with seq and commits it if fn succeeds.
func (s *Store) write(seq uint64, fn func(w *writeTxn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &writeTxn{store: s, txn: s.db.Txn(true), seq: seq, resources: s.resources, capacity: s.capacity,
		tables: map[string]struct{}{}}
	w.resetDirty()
	defer w.txn.Abort()
	if err := fn(w); err != nil {
		return err
	}
	if err := w.rebuildCapacity(); err != nil {
		return err
	}
	policies := s.policies
	if _, changed := w.tables[TablePolicies]; changed {
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
	if len(w.tables) > 0 {
		next := make(map[string]uint64, len(s.tableIndex)+len(w.tables))
		maps.Copy(next, s.tableIndex)
		for table := range w.tables {
			next[table] = max(next[table], seq)
		}
		s.tableIndex = next
	}
	s.resources = w.resources
	s.capacity = w.capacity
	s.latest = max(s.latest, seq)
	return nil
}

func (w *writeTxn) insert(table string, obj any) error {
	if err := w.txn.Insert(table, obj); err != nil {
		return fmt.Errorf("state: insert into %s: %w", table, err)
	}
	w.tables[table] = struct{}{}
	return nil
}

func (w *writeTxn) delete(table string, obj any) error {
	if err := w.txn.Delete(table, obj); err != nil {
		return fmt.Errorf("state: delete from %s: %w", table, err)
	}
	w.tables[table] = struct{}{}
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
	w.dirtyNodes = map[string]map[string]struct{}{}
	w.reservedDelta = map[string]structs.Vector{}
	w.reservationOps = map[string][]reservationOp{}
	w.rebuilt = map[string]bool{}
}

// markReserved records that reservation id starts (sign 1) or stops (sign -1) holding delta on a node.
func (w *writeTxn) markReserved(cluster, node, id string, delta structs.Vector, sign int64) {
	w.touchNode(cluster, node)
	key := structs.NodeID(cluster, node)
	w.reservationOps[key] = append(w.reservationOps[key], reservationOp{id: id, add: sign > 0})
	acc := w.reservedDelta[key]
	if len(acc) < len(delta) {
		acc = slices.Grow(acc, len(delta)-len(acc))[:len(delta)]
	}
	acc.AddInPlace(delta, sign)
	w.reservedDelta[key] = acc
}

// markNode records that a node object changed (or went away): its capacity is recomputed from scratch.
func (w *writeTxn) markNode(cluster, node string) {
	w.rebuilt[structs.NodeID(cluster, node)] = true
	w.touchNode(cluster, node)
}

func (w *writeTxn) touchNode(cluster, node string) {
	set, seen := w.dirtyNodes[cluster]
	if seen && set == nil {
		return // the whole cluster is already dirty
	}
	if set == nil {
		set = map[string]struct{}{}
		w.dirtyNodes[cluster] = set
	}
	set[node] = struct{}{}
}

func (w *writeTxn) markCluster(cluster string) { w.dirtyNodes[cluster] = nil }
