package state

import (
	"fmt"
	"sync/atomic"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// Ledger is what placement published and what came of it: per workload and cluster its copy (structs.Copy),
// and per workload the key of its last verdict. It is a go-memdb database of its own, beside the fleet view,
// because the two roll back differently: what events say of the fleet is folded once and kept (their
// redelivery folds them again to the same view), while a batch whose effects were not stored leaves no trace in
// the ledger, and its redelivery writes it again.
//
// Writes go into the transaction of the event being handled: Seal keeps them, Discard drops them. Commit
// marks what is sealed as stored; Abort goes back to the last Commit, discarding every event sealed since.
// Reads see the open transaction. A Ledger is not safe for concurrent use, but for UnplacedByReason.
type Ledger struct {
	db *memdb.MemDB
	// committed is the database as of the last Commit: its immutable root, which Abort goes back to and
	// UnplacedByReason reads from any goroutine.
	committed atomic.Pointer[memdb.MemDB]
	txn       *memdb.Txn
	// err is the first write the open transaction refused; Seal reports it.
	err error
}

// Verdict is what the ledger keeps of a workload's last verdict: the key that identifies it, and why it does
// not place the workload.
type Verdict struct {
	WorkloadID, Key string
	// Unplaced are the reasons the verdict does not place the workload, sorted (see UnplacedByReason); nil
	// when it places it.
	Unplaced []string
}

// NewLedger returns an empty ledger.
func NewLedger() (*Ledger, error) {
	db, err := memdb.NewMemDB(ledgerSchema())
	if err != nil {
		return nil, fmt.Errorf("state: build ledger schema: %w", err)
	}
	l := &Ledger{db: db}
	l.committed.Store(db.Snapshot())
	return l, nil
}

// write returns the open transaction, opening one.
func (l *Ledger) write() *memdb.Txn {
	if l.txn == nil {
		l.txn = l.db.Txn(true)
	}
	return l.txn
}

// read returns the transaction to read through: the open one, so an event reads its own writes.
func (l *Ledger) read() *memdb.Txn {
	if l.txn != nil {
		return l.txn
	}
	return l.db.Txn(false)
}

// Copy returns the workload's copy on the cluster; nil when the ledger knows none.
func (l *Ledger) Copy(workloadID, cluster string) *structs.Copy {
	return first[*structs.Copy](l.read(), TableCopies, indexID, copyID(workloadID, cluster))
}

// CopiesOf lists the workload's copies, by cluster name.
func (l *Ledger) CopiesOf(workloadID string) []*structs.Copy {
	return copiesOf(l.read(), workloadID)
}

// CopiesOn lists the copies on the cluster, by workload ID.
func (l *Ledger) CopiesOn(cluster string) []*structs.Copy {
	return all[*structs.Copy](l.read(), TableCopies, indexCluster, cluster)
}

// PutCopy stores c, replacing what the ledger had of that copy; a copy with nothing to remember (Copy.Empty)
// is removed. The ledger keeps c: it must not be modified afterwards.
func (l *Ledger) PutCopy(c *structs.Copy) {
	txn := l.write()
	id := copyID(c.WorkloadID, c.Cluster)
	var err error
	if c.Empty() {
		_, err = txn.DeleteAll(TableCopies, indexID, id)
	} else {
		err = txn.Insert(TableCopies, c)
	}
	l.fail(err, "copy of %s on %s", c.WorkloadID, c.Cluster)
}

// Verdict returns the key of the workload's last verdict, "" when none.
func (l *Ledger) Verdict(workloadID string) string {
	if v := first[*Verdict](l.read(), TableVerdicts, indexID, workloadID); v != nil {
		return v.Key
	}
	return ""
}

// SetVerdict records v as its workload's last verdict. The ledger keeps v: it must not be modified afterwards.
func (l *Ledger) SetVerdict(v *Verdict) {
	l.fail(l.write().Insert(TableVerdicts, v), "verdict of %s", v.WorkloadID)
}

// ForgetVerdict forgets the workload's last verdict.
func (l *Ledger) ForgetVerdict(workloadID string) {
	_, err := l.write().DeleteAll(TableVerdicts, indexID, workloadID)
	l.fail(err, "verdict of %s", workloadID)
}

// UnplacedByReason counts, as of the last Commit, the workloads whose last verdict did not place them under
// each of its reasons (Verdict.Unplaced). It may be called from any goroutine.
func (l *Ledger) UnplacedByReason() map[string]int {
	counts := map[string]int{}
	it, err := l.committed.Load().Txn(false).Get(TableVerdicts, indexID)
	if err != nil {
		return counts
	}
	for obj := it.Next(); obj != nil; obj = it.Next() {
		for _, r := range obj.(*Verdict).Unplaced {
			counts[r]++
		}
	}
	return counts
}

func (l *Ledger) fail(err error, what string, args ...any) {
	if err != nil && l.err == nil {
		l.err = fmt.Errorf("state: ledger: write %s: %w", fmt.Sprintf(what, args...), err)
	}
}

// Seal keeps what the event being handled wrote. When a write was refused, nothing of the event is kept, and
// the error says which write.
func (l *Ledger) Seal() error {
	if err := l.err; err != nil {
		l.Discard()
		return err
	}
	if l.txn != nil {
		l.txn.Commit()
		l.txn = nil
	}
	return nil
}

// Discard drops what the event being handled wrote.
func (l *Ledger) Discard() {
	if l.txn != nil {
		l.txn.Abort()
		l.txn = nil
	}
	l.err = nil
}

// Commit marks every event sealed so far as stored: Abort no longer goes back past it.
func (l *Ledger) Commit() {
	l.Discard()
	l.committed.Store(l.db.Snapshot())
}

// Abort discards every event sealed since the last Commit, and the open one: the ledger is as it was then.
func (l *Ledger) Abort() {
	l.Discard()
	l.db = l.committed.Load().Snapshot()
}

func copiesOf(txn *memdb.Txn, workloadID string) []*structs.Copy {
	return all[*structs.Copy](txn, TableCopies, indexID+"_prefix", workloadID+"\x00")
}

// copyID is a copy's primary key: its workload's ID, then its cluster, so a prefix scan lists a workload's
// copies in cluster order.
func copyID(workloadID, cluster string) string { return workloadID + "\x00" + cluster }
