package karta

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupVersion of the Karta ResourceInterface API.
const (
	Group   = "optimization.nvidia.com"
	Version = "v1alpha1"
	KindRI  = "ResourceInterface"
)

// ResourceInterface mirrors the Karta CRD (resourceinterfaces.optimization.nvidia.com, v1alpha1).
// Fields marked "fleetflow extension" are not part of Karta; only our built-in RIs use them,
// and Karta's own RIs load unchanged because every extension is optional.
type ResourceInterface struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ResourceInterfaceSpec `json:"spec"`
	// Warnings are what parsing noticed but let pass: fields of the spec the engine does not know.
	Warnings []string `json:"-"`
}

// ResourceInterfaceSpec is the spec of a ResourceInterface.
type ResourceInterfaceSpec struct {
	StructureDefinition      StructureDefinition       `json:"structureDefinition"`
	OptimizationInstructions *OptimizationInstructions `json:"optimizationInstructions,omitempty"`
}

// StructureDefinition is the compute hierarchy of a workload: a root component and its children.
type StructureDefinition struct {
	RootComponent        ComponentDefinition   `json:"rootComponent"`
	ChildComponents      []ComponentDefinition `json:"childComponents,omitempty"`
	AdditionalChildKinds []GroupVersionKind    `json:"additionalChildKinds,omitempty"`
}

// GroupVersionKind is the CRD's spelling of a Kubernetes GVK.
type GroupVersionKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// ComponentDefinition is one component of the workload hierarchy.
type ComponentDefinition struct {
	Name             string            `json:"name"`
	Kind             *GroupVersionKind `json:"kind,omitempty"`
	OwnerRef         *string           `json:"ownerRef,omitempty"`
	SpecDefinition   *SpecDefinition   `json:"specDefinition,omitempty"`
	ScaleDefinition  *ScaleDefinition  `json:"scaleDefinition,omitempty"`
	StatusDefinition *StatusDefinition `json:"statusDefinition,omitempty"`
	InstanceIDPath   *string           `json:"instanceIdPath,omitempty"`
	PodSelector      *PodSelector      `json:"podSelector,omitempty"`
}

// SpecDefinition says where a component keeps its pods: a PodTemplateSpec, a PodSpec (+ metadata),
// or pod fields scattered over the CR. Only one form may be used.
type SpecDefinition struct {
	PodTemplateSpecPath         *string                      `json:"podTemplateSpecPath,omitempty"`
	PodSpecPath                 *string                      `json:"podSpecPath,omitempty"`
	MetadataPath                *string                      `json:"metadataPath,omitempty"`
	FragmentedPodSpecDefinition *FragmentedPodSpecDefinition `json:"fragmentedPodSpecDefinition,omitempty"`
}

// FragmentedPodSpecDefinition holds jq paths to individual pod fields.
type FragmentedPodSpecDefinition struct {
	SchedulerNamePath     *string `json:"schedulerNamePath,omitempty"`
	LabelsPath            *string `json:"labelsPath,omitempty"`
	AnnotationsPath       *string `json:"annotationsPath,omitempty"`
	ResourcesPath         *string `json:"resourcesPath,omitempty"`
	ResourceClaimsPath    *string `json:"resourceClaimsPath,omitempty"`
	PodAffinityPath       *string `json:"podAffinityPath,omitempty"`
	NodeAffinityPath      *string `json:"nodeAffinityPath,omitempty"`
	ContainersPath        *string `json:"containersPath,omitempty"`
	ContainerPath         *string `json:"containerPath,omitempty"`
	PriorityClassNamePath *string `json:"priorityClassNamePath,omitempty"`
	ImagePath             *string `json:"imagePath,omitempty"`

	// NodeSelectorPath is a fleetflow extension: the jq path to the pod's nodeSelector. Karta's
	// fragmented form has no place for it, yet placement must honour it (NIMService, KServe, Dynamo
	// and Milvus all carry one outside any pod template).
	NodeSelectorPath *string `json:"nodeSelectorPath,omitempty"`
	// TolerationsPath is a fleetflow extension: the jq path to the pod's tolerations, for the same reason.
	TolerationsPath *string `json:"tolerationsPath,omitempty"`
}

// ScaleDefinition holds jq paths to replica counts.
type ScaleDefinition struct {
	ReplicasPath    *string `json:"replicasPath,omitempty"`
	MinReplicasPath *string `json:"minReplicasPath,omitempty"`
	MaxReplicasPath *string `json:"maxReplicasPath,omitempty"`
}

// PodSelector says how to recognise a component's pods. The engine validates its jq but does not
// evaluate it: analysis works on the CR, not on pods.
type PodSelector struct {
	ComponentTypeSelector     *ComponentTypeSelector     `json:"componentTypeSelector,omitempty"`
	ComponentInstanceSelector *ComponentInstanceSelector `json:"componentInstanceSelector,omitempty"`
	ReplicaSelector           *ReplicaSelector           `json:"replicaSelector,omitempty"`
}

// ComponentTypeSelector matches a pod label or annotation.
type ComponentTypeSelector struct {
	KeyPath string  `json:"keyPath"`
	Value   *string `json:"value,omitempty"`
}

// ComponentInstanceSelector extracts the instance id from a pod.
type ComponentInstanceSelector struct {
	IDPath string `json:"idPath"`
}

// ReplicaSelector extracts the replica index or group from a pod.
type ReplicaSelector struct {
	KeyPath string `json:"keyPath"`
}

// StatusDefinition says how to read a component's status.
type StatusDefinition struct {
	PhaseDefinition      *PhaseDefinition      `json:"phaseDefinition,omitempty"`
	ConditionsDefinition *ConditionsDefinition `json:"conditionsDefinition,omitempty"`
	StatusMappings       StatusMappings        `json:"statusMappings"`
}

// PhaseDefinition is the jq path to a phase or state string.
type PhaseDefinition struct {
	Path string `json:"path"`
}

// ConditionsDefinition is the jq path to a conditions array and the field names within each condition.
// Empty field names take the CRD defaults (type, status, message, reason).
type ConditionsDefinition struct {
	Path             string  `json:"path"`
	TypeFieldName    string  `json:"typeFieldName,omitempty"`
	StatusFieldName  string  `json:"statusFieldName,omitempty"`
	MessageFieldName *string `json:"messageFieldName,omitempty"`
	ReasonFieldName  *string `json:"reasonFieldName,omitempty"`
}

// StatusMappings maps phases and conditions to Karta statuses; matchers within one status are ORed.
type StatusMappings struct {
	Initializing []StatusMatcher `json:"initializing,omitempty"`
	Running      []StatusMatcher `json:"running,omitempty"`
	Completed    []StatusMatcher `json:"completed,omitempty"`
	Failed       []StatusMatcher `json:"failed,omitempty"`
	Degraded     []StatusMatcher `json:"degraded,omitempty"`
}

// StatusMatcher matches when all of its given criteria match.
type StatusMatcher struct {
	ByPhase      string              `json:"byPhase,omitempty"`
	ByConditions []ExpectedCondition `json:"byConditions,omitempty"`
	ByExpression *ExpressionMatcher  `json:"byExpression,omitempty"`
}

// ExpectedCondition is a condition that must be present with the given status and/or reason.
type ExpectedCondition struct {
	Type   string `json:"type"`
	Status string `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ExpressionMatcher matches when the jq expression, evaluated on the CR, yields ExpectedResult
// (compared as a string: strings as they are, other values in their JSON form).
type ExpressionMatcher struct {
	Expression     string `json:"expression"`
	ExpectedResult string `json:"expectedResult"`
}

// OptimizationInstructions holds scheduling hints.
type OptimizationInstructions struct {
	GangScheduling *GangSchedulingInstruction `json:"gangScheduling,omitempty"`
}

// GangSchedulingInstruction lists pod groups to schedule together.
type GangSchedulingInstruction struct {
	PodGroups []PodGroupDefinition `json:"podGroups"`
}

// PodGroupDefinition is one gang.
type PodGroupDefinition struct {
	Name    string                     `json:"name"`
	Members []PodGroupMemberDefinition `json:"members"`
}

// PodGroupMemberDefinition is one component of a gang; its jq runs on pods, not on the CR.
type PodGroupMemberDefinition struct {
	ComponentName   string   `json:"componentName"`
	GroupByKeyPaths []string `json:"groupByKeyPaths,omitempty"`
	Filters         []string `json:"filters,omitempty"`
}
