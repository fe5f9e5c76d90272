package replay

import (
	"strings"

	"github.com/fleetflow/fleetflow/schemas"
)

// placerInput reports whether the placer consumes subject (schemas.PlacerInputs).
func placerInput(subject string) bool {
	for _, filter := range schemas.PlacerInputs {
		if strings.HasPrefix(subject, strings.TrimSuffix(filter, ">")) {
			return true
		}
	}
	return false
}

// placerOutput reports whether subject of stream holds what the placer publishes: decisions, and verdicts
// that no Apply carries.
func placerOutput(stream, subject string) bool {
	return stream == schemas.StreamDecisions || strings.HasPrefix(subject, verdictRoot)
}

var verdictRoot = schemas.SubjectEventsPrefix + ".verdict."
