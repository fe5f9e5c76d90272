package schemas

import (
	"fmt"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Workload clusters are a trust domain of their own: whatever their producers and appliers publish is checked
// against the bounds below before any fleetflow component acts on it, so a broken or hostile cluster cannot
// make itself look like the best target for every workload, or stall the consumers with huge messages.

// maxDataBytes bounds the data of the event types workload clusters publish. Each is generous for what a real
// cluster sends: a status is copied from an object etcd holds (at most 1.5 MiB by default), a node's report from
// a Node and its pods. The server's max payload (8 MiB) bounds the other types, which the control plane sends.
var maxDataBytes = map[string]int{
	TypeWorkloadStatus:   2 << 20,
	TypeNodeChanged:      1 << 20,
	TypeClusterAPIs:      1 << 20,
	TypePlacementFailed:  256 << 10,
	TypePlacementApplied: 64 << 10,
	TypeNodeDeleted:      16 << 10,
	TypeClusterHeartbeat: 16 << 10,
}

// MaxDataBytes is the most data an event of eventType may carry, or 0 when only the server's limit applies.
func MaxDataBytes(eventType string) int { return maxDataBytes[eventType] }

// checkDataSize refuses data over eventType's bound, naming both sizes.
func checkDataSize(eventType string, size int) error {
	if limit := maxDataBytes[eventType]; limit > 0 && size > limit {
		return fmt.Errorf("%w: data of %s is more than the %s an event of this type may carry",
			ErrInvalidPayload, byteSize(size), byteSize(limit))
	}
	return nil
}

// byteSize renders n bytes in the unit a reader compares sizes in.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// Plausible node capacity: no node fleetflow could meet offers more than this of a resource. The bounds are
// orders of magnitude above today's largest machines, and far below what would make one node look like a whole
// fleet.
var (
	maxNodeCPU      = resource.MustParse("65536") // cores
	maxNodeMemory   = resource.MustParse("1Pi")   // also each hugepages size
	maxNodeStorage  = resource.MustParse("64Pi")  // ephemeral-storage
	maxNodePods     = resource.MustParse("1M")
	maxNodeExtended = resource.MustParse("16Mi") // devices (GPUs, NICs) and other extended resources, in their units
)

// MaxNodeCapacity is the most of resource name a node may report as allocatable.
func MaxNodeCapacity(name corev1.ResourceName) resource.Quantity {
	switch {
	case name == corev1.ResourceCPU:
		return maxNodeCPU
	case name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return maxNodeMemory
	case name == corev1.ResourceEphemeralStorage || name == corev1.ResourceStorage:
		return maxNodeStorage
	case name == corev1.ResourcePods:
		return maxNodePods
	default:
		return maxNodeExtended
	}
}

// MaxFailureError bounds the error a PlacementFailed carries: an API error may quote a whole object, and the
// event must stay within its type's bound.
const MaxFailureError = 32 << 10

// ShortenError cuts msg to at most MaxFailureError bytes, at a character boundary, saying how much it left out.
func ShortenError(msg string) string {
	if len(msg) <= MaxFailureError {
		return msg
	}
	cut := MaxFailureError - 64
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", msg[:cut], len(msg)-cut)
}
