// Package state is the fleet view of the placement core: a go-memdb database of clusters, namespaces, nodes,
// workloads (each with the reservation its placement holds), policies and ResourceInterfaces, plus derived
// per-cluster capacity rows (free vectors per node in chunks, with sums and maxima, and the workloads reserving on
// each node) kept beside memdb as immutable values that each Snapshot captures.
//
// Every write names the stream sequence it came from and records it on the objects it touches and in the
// index table, so a Snapshot can say which view a decision was computed on. Objects are never modified after
// insert: a write builds a new object and replaces the old one, which is what makes Snapshot O(1) and safe to
// read while the pipeline keeps writing.
package state
