// Package producers owns the informers that turn Kubernetes state into fleetflow CloudEvents on
// JetStream: control-plane workloads today, and (per later issues) clusters, policies, resource
// interfaces, namespaces, and each workload cluster's nodes, capacity, installed APIs and status.
// Producers publish with content-derived ids, so several replicas may run at once.
package producers
