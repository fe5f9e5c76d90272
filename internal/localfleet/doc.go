// Package localfleet owns the real local fleet used by tests and the demo: one etcd and one kube-apiserver
// per cluster (a control plane plus workload clusters) on loopback ports, with their certificates,
// kubeconfigs, logs, pid files and a state file under one directory, and seeding of kubelet-less Nodes from a
// fleet description. With Options.RunPods each workload cluster also runs kube-scheduler,
// kube-controller-manager and kwok, and seeding makes its Nodes kwok's, so pods are scheduled and run; the
// framework operators of the catalog (StartOperators) then run against a cluster once their CRDs are served.
// Processes run in their own process groups and are stopped by pid, also from another process (Down),
// because a leaked apiserver holds hundreds of megabytes.
package localfleet
