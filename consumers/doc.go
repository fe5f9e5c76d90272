// Package consumers holds no code: its subpackages are the JetStream subscribers that act on events.
//
//   - placer feeds fleet events to the placement lifecycle (placement/lifecycle) and publishes the verdicts
//     and per-cluster decisions it returns.
//   - applier carries decisions out on one workload cluster, idempotently with server-side apply, and
//     reports each outcome.
//   - status, the status writer, puts workload, Cluster and SchedulePolicy status back on the control plane.
//   - audit is the audit tail, a plain reader of the streams.
//   - replay runs the recorded history through the placement lifecycle in process (the determinism check and
//     the what-if).
//   - ui serves the read-only fleet view in the browser, a reader of the streams like audit.
//
// internal/contract is the leaf they share: what each must read and write the same way as the others.
package consumers
