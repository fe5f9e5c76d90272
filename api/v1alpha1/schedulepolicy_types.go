package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SpreadMode says how a workload is spread over the clusters a policy selects.
// +kubebuilder:validation:Enum=Duplicate;Divide
type SpreadMode string

const (
	// SpreadModeDuplicate puts a full copy of the workload on every selected Ready cluster.
	SpreadModeDuplicate SpreadMode = "Duplicate"
	// SpreadModeDivide splits the replicas of a divisible workload over topology values by percentage.
	SpreadModeDivide SpreadMode = "Divide"
)

// ScoringStrategy says which of the fitting clusters is preferred.
// +kubebuilder:validation:Enum=BinPack;Spread
type ScoringStrategy string

const (
	// ScoringBinPack prefers the fitting cluster left with the least free capacity of the workload's
	// dominant resource, which keeps large holes open for large workloads.
	ScoringBinPack ScoringStrategy = "BinPack"
	// ScoringSpread prefers the fitting cluster left with the most free capacity of the dominant resource.
	ScoringSpread ScoringStrategy = "Spread"
)

// SchedulePolicy selects workloads and says on which clusters, and how, they are placed.
// When several policies match a workload the one with the highest priority wins; ties go to the smallest name.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=sp,categories=fleetflow
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Priority",type=integer,JSONPath=`.spec.priority`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SchedulePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SchedulePolicySpec   `json:"spec"`
	Status SchedulePolicyStatus `json:"status,omitempty"`
}

// SchedulePolicySpec is what a SchedulePolicy asks for.
type SchedulePolicySpec struct {
	// Priority orders matching policies: the highest wins, ties go to the smallest name.
	// +optional
	Priority int32 `json:"priority,omitempty"`
	// NamespaceSelector selects workloads by the labels of their namespace. Nil selects every namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// ResourceSelectors selects workloads by kind and labels.
	// +optional
	ResourceSelectors ResourceSelectors `json:"resourceSelectors,omitempty"`
	// ClusterSelector restricts placement to clusters whose labels match. Nil allows every cluster.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// OrderedClusterSelector is fill-and-spill: the tiers are tried in order and the first tier
	// with a cluster that fits wins. Tiers narrow ClusterSelector, they do not widen it: a cluster in no
	// tier is never used. Under a Duplicate spread they only select (every cluster of every tier gets a
	// copy); under Divide they order the clusters of each topology value.
	// +optional
	OrderedClusterSelector *OrderedClusterSelector `json:"orderedClusterSelector,omitempty"`
	// SpreadConstraints spreads the workload over several clusters. Nil places it on one cluster.
	// +optional
	SpreadConstraints *SpreadConstraints `json:"spreadConstraints,omitempty"`
	// GroupBy places all workloads that share a value of a label together on one cluster.
	// +optional
	GroupBy *GroupBy `json:"groupBy,omitempty"`
	// CapacityAware, true by default, checks that the workload fits. When false only order decides.
	// +optional
	CapacityAware *bool `json:"capacityAware,omitempty"`
	// Scoring picks among the fitting clusters: BinPack (default) or Spread.
	// +optional
	Scoring ScoringStrategy `json:"scoring,omitempty"`
	// Tolerations tolerate cluster taints.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// RescheduleOnFailure moves a workload to another cluster that fits when its status maps to Failed
	// (through its ResourceInterface's statusMappings), and when its cluster's applier gave up applying it
	// (forbidden, invalid, its CRD missing there), in which case it moves as soon as another cluster fits.
	// Without it a failed workload stays where it failed and is only reported. A Duplicate copy never moves
	// (every eligible cluster has one already): it stays and is reported, as without it.
	// +optional
	RescheduleOnFailure bool `json:"rescheduleOnFailure,omitempty"`
	// PinPods pins each pod of a placed workload to the node fleetflow packed it on, so the cluster's
	// scheduler binds the gang as it was fitted: the copy's pod templates get the scheduling gate
	// fleetflow.io/pinned, and fleetflow's pinner in the cluster gives each gated pod a required node
	// affinity to one packed node and lifts the gate. Workloads whose ResourceInterface does not name
	// each pod template by a plain field path are placed unpinned.
	// +optional
	PinPods bool `json:"pinPods,omitempty"`
}

// ResourceSelectors selects workloads. A workload matches when its kind is in Kinds (or Kinds is empty)
// and its labels match any of LabelSelectors (or LabelSelectors is empty).
type ResourceSelectors struct {
	// +optional
	Kinds []GroupKind `json:"kinds,omitempty"`
	// +optional
	LabelSelectors []metav1.LabelSelector `json:"labelSelectors,omitempty"`
}

// GroupKind names a kind of workload; Group is empty for the core group.
type GroupKind struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`
}

// OrderedClusterSelector is a list of cluster tiers for fill-and-spill.
type OrderedClusterSelector struct {
	// +kubebuilder:validation:MinItems=1
	Tiers []metav1.LabelSelector `json:"tiers"`
}

// SpreadConstraints says how a workload spreads over clusters. The rules below refuse at admission what the
// placer would mark Accepted=False (placement/policy validates the same, and what depends on the kinds).
// +kubebuilder:validation:XValidation:rule="self.spreadMode != 'Duplicate' || !has(self.percentageSplit) || size(self.percentageSplit) == 0",message="only Divide splits by percentage",fieldPath=".percentageSplit"
// +kubebuilder:validation:XValidation:rule="self.spreadMode != 'Duplicate' || !has(self.topologyKey) || size(self.topologyKey) == 0",message="only Divide spreads over a topologyKey; Duplicate copies to every selected cluster",fieldPath=".topologyKey"
// +kubebuilder:validation:XValidation:rule="self.spreadMode != 'Divide' || (has(self.percentageSplit) && size(self.percentageSplit) > 0)",message="Divide needs at least one entry",fieldPath=".percentageSplit"
// +kubebuilder:validation:XValidation:rule="self.spreadMode != 'Divide' || (has(self.topologyKey) && size(self.topologyKey) > 0)",message="required with percentageSplit",fieldPath=".topologyKey"
// +kubebuilder:validation:XValidation:rule="!has(self.percentageSplit) || size(self.percentageSplit) == 0 || self.percentageSplit.map(p, p.percentage).sum() == 100",message="percentages must sum to 100",fieldPath=".percentageSplit"
type SpreadConstraints struct {
	SpreadMode SpreadMode `json:"spreadMode"`
	// TopologyKey is a cluster label; its values are what PercentageSplit divides over (Divide only).
	// +optional
	TopologyKey string `json:"topologyKey,omitempty"`
	// PercentageSplit gives each topology value its share of the replicas (Divide only). The percentages sum to 100.
	// +optional
	// +listType=map
	// +listMapKey=topologyValue
	// +kubebuilder:validation:MaxItems=64
	PercentageSplit []PercentageSplit `json:"percentageSplit,omitempty"`
}

// PercentageSplit is one topology value's share.
type PercentageSplit struct {
	// +kubebuilder:validation:MinLength=1
	TopologyValue string `json:"topologyValue"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percentage int32 `json:"percentage"`
}

// GroupBy names the label whose value groups workloads.
type GroupBy struct {
	// +kubebuilder:validation:MinLength=1
	LabelKey string `json:"labelKey"`
}

// SchedulePolicyStatus reports whether the policy was accepted.
type SchedulePolicyStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions hold Accepted: False with the field path and reason when the policy is rejected.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// IsCapacityAware reports CapacityAware, true when unset.
func (s *SchedulePolicySpec) IsCapacityAware() bool {
	return s.CapacityAware == nil || *s.CapacityAware
}

// ScoringOrDefault reports Scoring, BinPack when unset.
func (s *SchedulePolicySpec) ScoringOrDefault() ScoringStrategy {
	if s.Scoring == "" {
		return ScoringBinPack
	}
	return s.Scoring
}

// SchedulePolicyList is a list of SchedulePolicy.
//
// +kubebuilder:object:root=true
type SchedulePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SchedulePolicy `json:"items"`
}
