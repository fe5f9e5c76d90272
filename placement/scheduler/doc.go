// Package scheduler runs one placement cycle per workload, in the order Karmada and kube-scheduler use:
// match the governing policy, filter the clusters (selector, Ready, tolerated taints, installed API), check that
// the whole gang fits on each candidate's nodes, score the fitting clusters, and select.
//
// The scheduler reads the fleet only through the read-only State port and writes only through the Planner port,
// as Nomad's schedulers do: it never mutates what it reads, and "no fit" is a decision (Unschedulable, with a
// reason for every rejected cluster), not an error.
//
// Vocabulary:
//   - gang: every pod of every component of a workload, which must all fit at once.
//   - bound check: a per-cluster test on summed and per-node maximum free capacity that prunes clusters
//     before any node is looked at. It never rejects a cluster that would fit.
//   - packing: first-fit-decreasing of the gang's pods onto nodes, honouring what kube-scheduler's filters
//     would: requests (the pods already on a node count against its pod slots), node selectors, required node
//     affinity, taints and tolerations, cordoned nodes (taken only by pods that tolerate the cordon),
//     spec.nodeName, host ports (two pods taking the same one never share a node), hard topology spread
//     constraints and pod affinity among a group's own pods (topology.go), and exclusive-topology units
//     (exclusive.go). Host ports of pods already running are not known, nor are affinities to other pods.
//   - tier: one step of fill-and-spill (orderedClusterSelector); the first tier with a fitting cluster wins.
//   - blocked: an unschedulable workload waiting for an event that could change the answer.
package scheduler
