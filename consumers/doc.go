// Package consumers owns the JetStream subscribers that act on events: the placer, which keeps the
// placement core's fleet view current and turns fleet events into verdicts and per-cluster decisions;
// the per-cluster appliers, which carry decisions out idempotently with server-side apply and report each
// outcome; the status writer, which puts workload, Cluster and SchedulePolicy status back on the control
// plane; and the audit tail, a plain reader of the streams.
package consumers
