// Package replay runs the recorded history of fleetflow's streams through the placement lifecycle
// (placement/lifecycle, the placer's rules) in process, with no stream or cluster written: to check that a
// build reproduces every recorded verdict and decision (a determinism check), to ask what a SchedulePolicy
// would have changed (the what-if), and to explain one workload on the fleet view as it stood.
//
// A History is the events and decisions streams, read from NATS or from a file of CloudEvents in structured
// JSON (one per line, each with its stream, sequence, subject and stored time as extension attributes); both
// must hold the whole history, from each stream's first sequence, with no gap.
package replay
