package replay

import (
	"strings"

	"github.com/fleetflow/fleetflow/schemas"
)

// placerOutput reports whether subject of stream holds what the placer publishes: decisions, and verdicts
// that no Apply carries.
func placerOutput(stream, subject string) bool {
	return stream == schemas.StreamDecisions || strings.HasPrefix(subject, verdictRoot)
}

var verdictRoot = schemas.SubjectEventsPrefix + ".verdict."
