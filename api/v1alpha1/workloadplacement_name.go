package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxPlacementName is the longest name a WorkloadPlacement can have (a DNS subdomain).
const maxPlacementName = 253

// WorkloadPlacementName is the name of the WorkloadPlacement of the workload called name, of kind: the two
// joined, lowercased, as Karmada names a ResourceBinding ("<name>-<kind>"), since workloads of two kinds may
// share a name in one namespace. A name that would pass 253 characters is cut and ends in a hash of the whole.
func WorkloadPlacementName(name, kind string) string {
	full := strings.ToLower(name + "-" + kind)
	full = strings.ReplaceAll(full, ":", ".") // RBAC-style names; a placement name is a DNS subdomain
	if len(full) <= maxPlacementName {
		return full
	}
	sum := sha256.Sum256([]byte(full))
	suffix := "-" + hex.EncodeToString(sum[:])[:10]
	return strings.TrimRight(full[:maxPlacementName-len(suffix)], "-.") + suffix
}
