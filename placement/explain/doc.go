// Package explain says why the placement core places a workload where it does, or nowhere: the workload's
// analysis, the policy that governs it and why each other policy does not, every check of every cluster with
// its result (scheduler.TraceClusters, the rules the scheduler applies, so an explanation cannot drift from
// the decisions), the decision the scheduler makes on the view, and the placement the store records.
//
// It reads one state.Snapshot and nothing else: no clock, no I/O but the writer it renders to. Every list is
// sorted, so the same view gives the same explanation byte for byte.
package explain
