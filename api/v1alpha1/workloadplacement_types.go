package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadPlacement shows where fleetflow placed one namespaced workload, and why not elsewhere: the status
// writer keeps one per workload that a policy selected, in the workload's namespace, named
// WorkloadPlacementName(name, kind), and owned by the workload, so it goes with it. It has no spec: fleetflow
// writes it whole, in one server-side apply, and users only read it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wlp,categories=fleetflow
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.status.workload.kind`
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.status.workload.name`
// +kubebuilder:printcolumn:name="Verdict",type=string,JSONPath=`.status.verdict`
// +kubebuilder:printcolumn:name="Clusters",type=string,JSONPath=`.status.clusterNames`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.status.policy`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WorkloadPlacement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status WorkloadPlacementStatus `json:"status,omitempty"`
}

// WorkloadPlacementStatus is what the status writer last showed of the workload: the same as its
// fleetflow.io/* annotations, in fields.
type WorkloadPlacementStatus struct {
	// Workload is the object this placement is about.
	Workload WorkloadReference `json:"workload"`
	// Verdict is the placer's last answer: Placed, Unschedulable, NoPolicy or Invalid.
	// +optional
	Verdict string `json:"verdict,omitempty"`
	// Policy is the SchedulePolicy that matched.
	// +optional
	Policy string `json:"policy,omitempty"`
	// ClusterNames lists the clusters the workload runs on, comma-separated (for the printer column).
	// +optional
	ClusterNames string `json:"clusterNames,omitempty"`
	// Phase is the workload's phase as its ResourceInterface maps its status; for a spread the least advanced.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Clusters are the clusters the workload runs on, with the phase and replicas of each copy.
	// +optional
	// +listType=map
	// +listMapKey=name
	Clusters []PlacedCluster `json:"clusters,omitempty"`
	// Message is the verdict's message: why the workload is not placed, or what else the placer noted.
	// +optional
	Message string `json:"message,omitempty"`
	// Reasons say why each other cluster was passed over, one short line per cluster.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Reasons []ClusterReason `json:"reasons,omitempty"`
	// ApplyError is the last error of an applier, until a success on its cluster clears it.
	// +optional
	ApplyError string `json:"applyError,omitempty"`
	// LastDecision is the placer's decision this status shows.
	// +optional
	LastDecision *DecisionReference `json:"lastDecision,omitempty"`
	// Applied lists, per cluster, the last decision its applier carried out for the workload.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Applied []AppliedDecision `json:"applied,omitempty"`
}

// WorkloadReference names the workload a placement is about.
type WorkloadReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	// +optional
	UID string `json:"uid,omitempty"`
}

// PlacedCluster is one copy of the workload.
type PlacedCluster struct {
	Name string `json:"name"`
	// Phase is the copy's phase as the workload's ResourceInterface maps its status.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Replicas is the copy's share of a Divide spread.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
}

// ClusterReason says why a cluster was passed over.
type ClusterReason struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
}

// DecisionReference is a placer decision: its sequence within the streams' epoch, and when the status writer
// first showed it.
type DecisionReference struct {
	// Sequence is "<epoch>/<sequence>", as the fleetflow.io/verdict-sequence annotation.
	Sequence string `json:"sequence"`
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// AppliedDecision is the last decision an applier carried out on its cluster.
type AppliedDecision struct {
	Cluster  string `json:"cluster"`
	Sequence int64  `json:"sequence"`
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// WorkloadPlacementList is a list of WorkloadPlacements.
//
// +kubebuilder:object:root=true
type WorkloadPlacementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadPlacement `json:"items"`
}
