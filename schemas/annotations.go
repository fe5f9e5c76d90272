package schemas

import (
	"encoding/json"
	"fmt"
	"strings"
)

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

// What fleetflow writes on a copy whose policy pins pods (pinPods), for the pinner in its cluster.
const (
	// AnnotationPins, on the copy, is PlacementDecided.Pins: per component, the nodes its pods were packed
	// on and how many on each, as JSON: {"worker":{"node-1":2,"node-2":1}}.
	AnnotationPins = AnnotationPrefix + "pins"
	// AnnotationPinComponent, on each pod template of the copy (and so on its pods), is the component the
	// template is of, as the keys of AnnotationPins name it.
	AnnotationPinComponent = AnnotationPrefix + "pin-component"
	// AnnotationPinCopy, on the same templates, is the copy the pods belong to, in their namespace:
	// "<kind>/<apiVersion>/<name>".
	AnnotationPinCopy = AnnotationPrefix + "pin-copy"
	// LabelPinned, "true" on the same templates, selects the pods the pinner watches.
	LabelPinned = AnnotationPrefix + "pinned"
	// SchedulingGatePinned, on the same templates, keeps each pod from being scheduled until the pinner gave
	// it a required node affinity to one of its component's packed nodes.
	SchedulingGatePinned = "fleetflow.io/pinned"
)

// Pins are the nodes each component's pods were packed on: component, node, pods.
type Pins map[string]map[string]int64

// String encodes the pins as AnnotationPins holds them; keys are sorted, so equal pins encode alike.
func (p Pins) String() string {
	if len(p) == 0 {
		return ""
	}
	b, err := json.Marshal(map[string]map[string]int64(p))
	if err != nil {
		return "" // maps of strings to integers always encode
	}
	return string(b)
}

// ParsePins decodes AnnotationPins.
func ParsePins(s string) (Pins, error) {
	var p Pins
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("annotation %s: %w", AnnotationPins, err)
	}
	for component, nodes := range p {
		for node, pods := range nodes {
			if pods < 0 {
				return nil, fmt.Errorf("annotation %s: component %s: node %s: negative pod count %d", AnnotationPins,
					component, node, pods)
			}
		}
	}
	return p, nil
}

// PinCopy is the value of AnnotationPinCopy for a copy.
func PinCopy(kind, apiVersion, name string) string { return kind + "/" + apiVersion + "/" + name }

// ParsePinCopy splits AnnotationPinCopy into kind, apiVersion and name.
func ParsePinCopy(s string) (kind, apiVersion, name string, err error) {
	first, last := strings.Index(s, "/"), strings.LastIndex(s, "/")
	if first <= 0 || last <= first+1 || last == len(s)-1 {
		return "", "", "", fmt.Errorf("annotation %s: %q is not <kind>/<apiVersion>/<name>", AnnotationPinCopy, s)
	}
	return s[:first], s[first+1 : last], s[last+1:], nil
}

// IsFleetflowAnnotation reports whether key is control-plane bookkeeping of fleetflow.
func IsFleetflowAnnotation(key string) bool { return strings.HasPrefix(key, AnnotationPrefix) }
