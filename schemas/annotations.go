package schemas

import "strings"

// Annotations fleetflow writes on control-plane workloads, so `kubectl get -o yaml` (or a column) tells
// the user where each workload runs and why.
const (
	// AnnotationPrefix marks every fleetflow annotation; such annotations are bookkeeping of the control
	// plane and are never copied to workload clusters.
	AnnotationPrefix = "fleetflow.io/"
	// AnnotationCluster is where the workload runs (comma-separated for a spread).
	AnnotationCluster = AnnotationPrefix + "cluster"
	// AnnotationPhase is the workload's phase mapped through its RI's statusMappings. For a workload spread
	// over several clusters it is the least advanced of their phases (Failed, Degraded, Initializing,
	// Undefined, Running, Completed: a copy that failed or has not reported decides it).
	AnnotationPhase = AnnotationPrefix + "phase"
	// AnnotationClusterPhases is, for a workload spread over several clusters, each one's phase:
	// "cluster-a=Running,cluster-b=Initializing", in the order of AnnotationCluster.
	AnnotationClusterPhases = AnnotationPrefix + "cluster-phases"
	// AnnotationClusterReplicas is, for a workload a Divide spread splits, each cluster's share of its replicas:
	// "cluster-a=5,cluster-b=3", in the order of AnnotationCluster.
	AnnotationClusterReplicas = AnnotationPrefix + "cluster-replicas"
	// AnnotationPlacement is the latest verdict: Placed, Unschedulable, NoPolicy or Invalid.
	AnnotationPlacement = AnnotationPrefix + "placement"
	// AnnotationPolicy is the SchedulePolicy that governs the workload.
	AnnotationPolicy = AnnotationPrefix + "policy"
	// AnnotationReasons explains the latest verdict, of any status: its message first when it has one (why
	// the clusters that passed rank below the chosen one, or where an Unschedulable workload still runs), then
	// one "cluster: reason" line per cluster passed over, in name order; at most 32 KiB (the status writer's
	// MaxReasonsAnnotationBytes), past which it points to fleetflow audit tail.
	AnnotationReasons = AnnotationPrefix + "reasons"
	// AnnotationVerdictSequence is "<epoch>/<sequence>" of the verdict the annotations above show, so an
	// older verdict handled after it (a retried delivery) does not overwrite them.
	AnnotationVerdictSequence = AnnotationPrefix + "verdict-sequence"
	// AnnotationPlacementError is the API error of a decision an applier could not carry out.
	AnnotationPlacementError = AnnotationPrefix + "placement-error"
)

// IsFleetflowAnnotation reports whether key is control-plane bookkeeping of fleetflow.
func IsFleetflowAnnotation(key string) bool { return strings.HasPrefix(key, AnnotationPrefix) }
