// Package placement is fleetflow's pure placement core: it decides which workload cluster runs each workload.
// It performs no I/O and imports no NATS, client-go or CloudEvents package; the pipeline feeds it events
// and carries its decisions out.
//
//   - structs: the domain model shared by the store and the scheduler (resource vectors, nodes, decisions).
//   - state: the go-memdb fleet view, written with the stream sequence of every change and read through snapshots.
//   - policy: SchedulePolicy validation and matching.
//   - scheduler: one placement cycle per workload (match, filter, fit, score, select), over a read-only State
//     and writing only through a Planner.
//   - lifecycle: the rules of a workload's life across the fleet, as a Controller that turns recorded events into
//     verdicts and decisions; the placer and the replay run it.
//   - explain: why one workload is placed where it is, every check of every cluster, from a snapshot.
//   - karta: the Karta ResourceInterface engine that turns any CR into an Analysis of what it needs.
//   - objects: what of a Kubernetes object is copied to a workload cluster, and how components read it alike.
package placement
