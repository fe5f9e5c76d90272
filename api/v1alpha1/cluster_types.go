package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterConditionReady is the condition type that says the cluster answers and can take workloads.
const ClusterConditionReady = "Ready"

// ClusterConditionAccepted is the condition type that says whether fleetflow accepted the Cluster's spec: False
// names every invalid field with its path (a taint an older CRD let in), and the cluster then takes no new
// workloads.
const ClusterConditionAccepted = "Accepted"

// ClusterConditionJoined is the condition type that says whether fleetflow could start working with the
// cluster: its kubeconfig Secret read and parsed (False names the Secret, the key and the reason).
const ClusterConditionJoined = "Joined"

// Cluster registers a workload cluster with the control plane. Its labels (metadata.labels) are what
// cluster selectors and topology keys read.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=fcl,categories=fleetflow
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Free CPU",type=string,JSONPath=`.status.free.cpu`
// +kubebuilder:printcolumn:name="Free GPU",type=string,JSONPath=`.status.free.nvidia\.com/gpu`
// +kubebuilder:printcolumn:name="Free Memory",type=string,JSONPath=`.status.free.memory`,priority=1
// +kubebuilder:printcolumn:name="Heartbeat",type=date,JSONPath=`.status.lastHeartbeatTime`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterSpec says how to reach a cluster and what it refuses.
type ClusterSpec struct {
	// KubeconfigSecretRef points at the Secret key that holds the cluster's kubeconfig.
	KubeconfigSecretRef SecretKeyRef `json:"kubeconfigSecretRef"`
	// Taints repel workloads whose policy does not tolerate them.
	// +optional
	Taints []ClusterTaint `json:"taints,omitempty"`
}

// ClusterTaint keeps the workloads whose policy does not tolerate it off the cluster, as a node's taint keeps
// pods off the node. It is held to the rules of a node's taint: its key is a label key and its value a label
// value. The schema refuses what it can; fleetflow refuses the rest, and a taint an older schema let in, with the
// Cluster's Accepted condition.
type ClusterTaint struct {
	// Key is a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 alphanumerics,
	// '-', '_' or '.', starting and ending with an alphanumeric.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Value is a label value: empty, or at most 63 alphanumerics, '-', '_' or '.', starting and ending with an
	// alphanumeric.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +optional
	Value string `json:"value,omitempty"`
	// Effect is NoSchedule (new workloads stay off, those there stay), PreferNoSchedule (the cluster ranks
	// after the others of its tier) or NoExecute (the workloads there move off too, when another cluster fits).
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect"`
	// TimeAdded is taken as a node's taint has it (a taint copied from a node); fleetflow does not read it.
	// +optional
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// Taint is t as a node's taint, the form the placement core matches tolerations against.
func (t *ClusterTaint) Taint() corev1.Taint {
	return corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect, TimeAdded: t.TimeAdded}
}

// SecretKeyRef names one key of one Secret.
type SecretKeyRef struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Key defaults to "kubeconfig".
	// +optional
	Key string `json:"key,omitempty"`
}

// ClusterStatus is what fleetflow last observed of the cluster.
type ClusterStatus struct {
	// Conditions hold Ready, Joined and Accepted.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// LastHeartbeatTime is when the cluster last answered.
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`
	// Allocatable is the sum of the allocatable resources of the cluster's nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Free is Allocatable less what running pods request and what fleetflow has reserved.
	// +optional
	Free corev1.ResourceList `json:"free,omitempty"`
	// InstalledAPIs lists the kinds the cluster serves, as "group/version/Kind" ("v1/Pod" for the core group).
	// +optional
	InstalledAPIs []string `json:"installedAPIs,omitempty"`
}

// ClusterList is a list of Cluster.
//
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
