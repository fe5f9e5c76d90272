// Package chaos runs fleetflow under random faults and checks that what it promises still holds.
//
// A run drives a running fleet (the local fleet's apiservers, a NATS cluster, and fleetflow's parts as
// separate processes) with three loops, all from one seed:
//
//   - load submits workloads to the control plane and deletes some of them;
//   - faults kills a random target (a part, a NATS node, an apiserver) with SIGKILL at random moments and
//     brings it back after a random delay;
//   - after the last fault, check reads the clusters and the streams until every promise holds (the
//     convergence time) or the time runs out, and names each violation left.
//
// The package starts fleetflow's parts itself (Process); the fleet and the NATS cluster come from the caller
// as Targets, so the same run works on any fleet it can kill and restart.
package chaos
