// Package state is the fleet view of the placement core: a go-memdb database of clusters, namespaces,
// workloads (each with the reservation its placement holds), policies and ResourceInterfaces, plus per-cluster
// capacity rows kept beside memdb as immutable values that each Snapshot captures. A row holds the cluster's
// nodes in name order, in chunks, each node with its free vector and the workloads reserving on it, and the
// chunks' sums and maxima. The nodes live only there: a fleet has far more nodes than anything else, and a
// memdb row each would double what every garbage collection marks.
//
// Every write names the stream sequence it came from and records it on the objects it touches and in the
// index table, so a Snapshot can say which view a decision was computed on. Objects are never modified after
// insert: a write builds a new object and replaces the old one, which is what makes Snapshot O(1) and safe to
// read while the pipeline keeps writing.
//
// Ledger is a second go-memdb database, of what placement published and what came of it: a row per workload and
// cluster (structs.Copy) and each workload's last verdict. It rolls back where the fleet view does not: a
// transaction per event, and Abort goes back to the root kept at the last Commit.
package state
