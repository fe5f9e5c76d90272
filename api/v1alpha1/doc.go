// Package v1alpha1 holds the Go types of fleetflow's own API group, fleetflow.io/v1alpha1: SchedulePolicy,
// which says where workloads may go, Cluster, which registers a workload cluster with the control plane, and
// WorkloadPlacement, which shows where a workload was placed and why.
// The CRD YAML under deploy/crds is generated from these types by hack/codegen.sh.
//
// +kubebuilder:object:generate=true
// +groupName=fleetflow.io
package v1alpha1
