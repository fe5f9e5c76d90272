// Package operators is the end-to-end test of fleetflow with a real framework operator: on a local fleet
// whose workload clusters run pods (kube-scheduler, kube-controller-manager, kwok), fleetflow copies the
// training operator's CRDs by level 1, the operator starts in each cluster once they are served, and a
// PyTorchJob placed by fleetflow runs there: the operator creates its pods, kube-scheduler binds them to
// KWOK nodes, kwok completes them, and the operator's status comes back to the control plane. Pods that
// stay Pending on the chosen cluster move the job. The package holds only tests and testdata.
package operators
