// Package benchbinding measures whether kube-scheduler agrees with fleetflow's placements: it starts a local
// fleet whose workload clusters run kube-scheduler, kube-controller-manager and kwok, fragments their GPU
// nodes with seed pods, runs the whole pipeline in process, submits random gangs, and counts per placed
// workload whether every pod was bound to a node in time. Each mode pairs a fit mode of the placer
// (nodes or summed) with a scoring profile of the clusters' kube-scheduler, and says whether the policy pins
// each pod to its packed node (pinPods). `fleetflow bench binding` prints
// what Run returns.
package benchbinding
