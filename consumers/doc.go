// Package consumers owns the JetStream subscribers that act on events: the placer, which turns workload
// events into placement decisions through a Decider (the placement core), and the per-cluster appliers,
// which carry decisions out idempotently with server-side apply and report each outcome as an event.
package consumers
