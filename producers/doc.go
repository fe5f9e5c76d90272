// Package producers owns the informers that turn Kubernetes state into fleetflow CloudEvents on
// JetStream: the control-plane producer (namespaces, Clusters, SchedulePolicies, ResourceInterfaces and
// workloads of every kind a built-in RI, a policy or an RI names, added while it runs) and one cluster
// producer per workload cluster (nodes with the resources their pods request, installed APIs, a
// heartbeat, and the status and pending pods of the workloads fleetflow placed there). Event ids derive
// from content, so several replicas may run at once and JetStream stores each change once.
package producers
