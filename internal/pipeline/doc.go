// Package pipeline wires fleetflow's parts into running processes: it opens (or embeds) JetStream,
// provisions the streams, and runs the producer, the placer and the per-cluster appliers, together in one
// process (fleetflow run) or each alone against a shared NATS.
package pipeline
