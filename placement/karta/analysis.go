package karta

import (
	corev1 "k8s.io/api/core/v1"
)

// Phase is a workload's lifecycle phase as mapped through an RI's statusMappings.
type Phase string

// Phases in Karta's vocabulary.
const (
	PhaseInitializing Phase = "Initializing"
	PhaseRunning      Phase = "Running"
	PhaseCompleted    Phase = "Completed"
	PhaseFailed       Phase = "Failed"
	PhaseDegraded     Phase = "Degraded"
	PhaseUndefined    Phase = "Undefined"
)

// Analysis is what a CR asks of the fleet, as read through its ResourceInterface.
// It is the contract between the RI engine and the scheduler: the scheduler never reads the CR itself.
// An Analysis is immutable once returned: its PodTemplate and PodRequests values are shared with
// other analyses of the same pod template (the engine caches decoded templates), and its GangGroups with
// every analysis through the same RI, and must not be modified.
type Analysis struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	// GenerateName is metadata.generateName of an object that has no name yet (one written for
	// `kubectl create`), so reports can say which object they describe.
	GenerateName string
	// ResourceInterface names the RI (its metadata.name, or the file it came from) that produced this analysis.
	ResourceInterface string
	// Components holds one entry per child component with a pod definition and per instance of it,
	// in the RI's child-component order, and instances in the order the instance-id path yields them.
	Components []ComponentInstance
	// TotalPods is the sum of Pods over Components.
	TotalPods int64
	// TotalRequests is the sum over Components of Pods × PodRequests.
	TotalRequests corev1.ResourceList
	GangGroups    []GangGroup
	// ExclusiveUnits are the sets of pods that each need a topology domain of their own (see
	// AnnotationExclusiveTopology), nil when the RI says none.
	ExclusiveUnits []ExclusiveUnit
	Status         Phase
}

// ComponentInstance is one instance of one pod-bearing child component.
type ComponentInstance struct {
	Name string
	// Instance is the instance id, "" when the component has no instanceIdPath.
	Instance string
	// Replicas, MinReplicas and MaxReplicas are exactly what the RI's paths yield; nil means unset.
	Replicas    *int64
	MinReplicas *int64
	MaxReplicas *int64
	// Pods is what placement reserves: Replicas if set, else MinReplicas, else 1.
	Pods        int64
	PodTemplate *corev1.PodTemplateSpec
	// PodRequests is the effective per-pod request under the Kubernetes rules (init containers, sidecars, overhead).
	PodRequests          corev1.ResourceList
	NodeSelector         map[string]string
	RequiredNodeAffinity *corev1.NodeSelector
	Tolerations          []corev1.Toleration
	// Scalable is true when the component's replica count comes from a plain field path
	// (ReplicasFieldPath) that a Divide spread can rewrite per cluster.
	Scalable          bool
	ReplicasFieldPath []string
	// PodTemplatePath is the field path of this instance's pod template in the CR (an array index as its
	// decimal string); nil when the template is not in the CR (the RI builds it) or the form is podSpecPath
	// or fragmented: placement can pin only pods whose template it can write to. Two components may share
	// one (LeaderWorkerSet's leader made from the worker template).
	PodTemplatePath []string
}

// GangGroup is a set of components whose pods must be scheduled together.
type GangGroup struct {
	Name string
	// Components names the member components; an empty Filters list means every pod of the component.
	Members []GangMember
}

// GangMember is one component of a gang group.
type GangMember struct {
	ComponentName   string
	GroupByKeyPaths []string
	Filters         []string
}
