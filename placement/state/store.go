package state

import (
	"fmt"
	"sync"
	"time"

	memdb "github.com/hashicorp/go-memdb"

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
	latest    uint64
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
	return &Store{config: config, db: db, resources: structs.NewResourceTable()}, nil
}

// Config returns the store's configuration with defaults filled in.
func (s *Store) Config() Config { return s.config }

// Snapshot returns an immutable view of the fleet as of now, in O(1).
func (s *Store) Snapshot() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Snapshot{txn: s.db.Txn(false), resources: s.resources, index: s.latest}
}

// writeTxn is one write: a memdb transaction plus the capacity rows it has to rebuild before commit.
type writeTxn struct {
	store     *Store
	txn       *memdb.Txn
	seq       uint64
	resources *structs.ResourceTable
	// dirtyNodes lists, per cluster, the nodes whose capacity must be recomputed; a nil set means the whole cluster.
	dirtyNodes map[string]map[string]struct{}
	tables     map[string]struct{}
}

// write runs fn in a write transaction stamped with seq and commits it if fn succeeds.
func (s *Store) write(seq uint64, fn func(w *writeTxn) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := &writeTxn{store: s, txn: s.db.Txn(true), seq: seq, resources: s.resources,
		dirtyNodes: map[string]map[string]struct{}{}, tables: map[string]struct{}{}}
	defer w.txn.Abort()
	if err := fn(w); err != nil {
		return err
	}
	if err := w.rebuildCapacity(); err != nil {
		return err
	}
	for table := range w.tables {
		if err := w.txn.Insert(TableIndex, &IndexEntry{Table: table, Value: seq}); err != nil {
			return fmt.Errorf("state: record index of %s: %w", table, err)
		}
	}
	w.txn.Commit()
	s.resources = w.resources
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

func (w *writeTxn) markNode(cluster, node string) {
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
