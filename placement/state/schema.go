package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Table names.
const (
	TableClusters   = "clusters"
	TableNamespaces = "namespaces"
	// TableNodes names no memdb table: a cluster's nodes live in its capacity row, in name order, which the
	// scheduler reads anyway. A memdb row per node would add a radix-tree entry of five or six small objects
	// for each of a large fleet's nodes, all marked by every garbage collection. Its table index still
	// follows every node change.
	TableNodes              = "nodes"
	TableWorkloads          = "workloads"
	TablePolicies           = "policies"
	TableResourceInterfaces = "resource_interfaces"
	// TableReservations names no memdb table: reservations live in their workloads (Workload.Reservation), and the
	// workloads holding capacity on a node are listed in its capacity row (NodeCapacity.ReservedBy). Its table
	// index still follows every reservation change.
	TableReservations = "reservations"

	// The ledger's tables (Ledger).
	TableCopies   = "copies"
	TableVerdicts = "verdicts"
)

// Index names.
const (
	indexID = "id"
	// indexGroupKind finds the ResourceInterface of a kind ("group/Kind").
	indexGroupKind = "group_kind"
	// indexCluster finds the copies on a cluster.
	indexCluster = "cluster"
)

func schema() *memdb.DBSchema {
	return schemaOf(clustersTableSchema, namespacesTableSchema, workloadsTableSchema, policiesTableSchema,
		resourceInterfacesTableSchema)
}

func ledgerSchema() *memdb.DBSchema { return schemaOf(copiesTableSchema, verdictsTableSchema) }

func schemaOf(tables ...func() *memdb.TableSchema) *memdb.DBSchema {
	db := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}}
	for _, factory := range tables {
		t := factory()
		if _, dup := db.Tables[t.Name]; dup {
			panic(fmt.Sprintf("state: duplicate table %q", t.Name))
		}
		db.Tables[t.Name] = t
	}
	return db
}

func idIndex[T any](value func(T) string) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: indexID, Unique: true, Indexer: stringIndexer[T]{value: value}}
}

func clustersTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableClusters, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(c *structs.Cluster) string { return c.Name }),
	}}
}

func namespacesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNamespaces, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(n *structs.Namespace) string { return n.Name }),
	}}
}

func workloadsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableWorkloads, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(w *structs.Workload) string { return w.ID }),
	}}
}

func policiesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TablePolicies, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(p *policy.Policy) string { return p.Name }),
	}}
}

func resourceInterfacesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableResourceInterfaces, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(ri *structs.ResourceInterface) string { return ri.Name }),
		indexGroupKind: {Name: indexGroupKind,
			Indexer: stringIndexer[*structs.ResourceInterface]{value: (*structs.ResourceInterface).GroupKind}},
	}}
}

func copiesTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableCopies, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(c *structs.Copy) string { return copyID(c.WorkloadID, c.Cluster) }),
		indexCluster: {Name: indexCluster,
			Indexer: stringIndexer[*structs.Copy]{value: func(c *structs.Copy) string { return c.Cluster }}},
	}}
}

func verdictsTableSchema() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableVerdicts, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex(func(v *Verdict) string { return v.WorkloadID }),
	}}
}
