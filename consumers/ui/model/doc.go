// Package model is the browser fleet view's read model: what the streams say of the fleet now, kept in
// memory and fed by nothing but fleetflow's events and decisions. Follow reads the state stream (the last
// message of every subject) for the current picture, then follows the events and decisions streams from
// where that copy ends, so the picture stays current and the live feed sees every verdict and decision as it
// is stored.
//
// The model keeps, per workload cluster, its heartbeat and the allocatable and requested resources of its
// nodes (summed as nodes change, so a page of 100 clusters of 1,000 nodes costs no sum over nodes), and each
// GPU node's free GPUs; per workload, its kind, its latest verdict (the one with the highest sequence, as the
// status writer takes it), the analysis the verdict carries, and its status per cluster; and the most recent
// decisions, verdicts and applier reports. Readers get copies; no Kubernetes credential is involved.
package model
