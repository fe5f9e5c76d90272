// Package app is the application of the fleetflow command, above the components: it wires fleetflow's
// parts into running processes. It opens (or embeds) JetStream, provisions the streams, and runs the
// producer, the placer and the per-cluster appliers, together in one process (fleetflow run) or each alone
// against a shared NATS. Like cmd/<x>/app in Kubernetes, it imports the producers and consumers; nothing
// under internal/ imports it.
package app
