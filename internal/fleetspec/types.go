package fleetspec

import (
	corev1 "k8s.io/api/core/v1"
)

// Fleet is a fleet description. Parse fills and validates it.
type Fleet struct {
	// Namespaces maps a namespace name to its labels, for policies with a namespaceSelector.
	Namespaces map[string]Namespace `json:"namespaces,omitempty"`
	Clusters   []Cluster            `json:"clusters"`
}

// Namespace is a namespace of the control plane.
type Namespace struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// Cluster is one workload cluster.
type Cluster struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Ready defaults to true.
	Ready  *bool          `json:"ready,omitempty"`
	Taints []corev1.Taint `json:"taints,omitempty"`
	// APIs lists installed kinds as "group/version/Kind" ("v1/Pod" for the core group); empty means every kind.
	APIs  []string    `json:"apis,omitempty"`
	Nodes []NodeGroup `json:"nodes,omitempty"`
}

// NodeGroup is Count identical nodes named Name-0 .. Name-(Count-1), or one node named Name when Count is 0.
type NodeGroup struct {
	Name   string            `json:"name"`
	Count  int               `json:"count,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Taints []corev1.Taint    `json:"taints,omitempty"`
	// Allocatable is each node's status.allocatable, and only that: a resource left out is none, as for
	// kube-scheduler, so a pod asking for ephemeral-storage (many vLLM and Ray samples do), hugepages or a device
	// fits only nodes that list it. A kubelet always reports cpu, memory, ephemeral-storage and pods.
	Allocatable corev1.ResourceList `json:"allocatable"`
	// Requested is what running pods already use on each node of the group.
	Requested     corev1.ResourceList `json:"requested,omitempty"`
	Unschedulable bool                `json:"unschedulable,omitempty"`
}

// Node is one concrete node after expanding a NodeGroup.
type Node struct {
	Name          string
	Labels        map[string]string
	Taints        []corev1.Taint
	Allocatable   corev1.ResourceList
	Requested     corev1.ResourceList
	Unschedulable bool
}

// IsReady reports the cluster's readiness, true unless set otherwise.
func (c Cluster) IsReady() bool { return c.Ready == nil || *c.Ready }
