// Package frameworkoperators is the end-to-end test of fleetflow with the real KubeRay, JobSet and
// LeaderWorkerSet operators running against a local fleet whose pods run (kube-scheduler, kwok): a
// RayCluster, a JobSet and a LeaderWorkerSet submitted to the control plane are placed, their operator
// creates their pods in the chosen cluster, kube-scheduler binds them, and the operator's status comes
// back to the control plane. The package holds only tests and testdata.
package frameworkoperators
