package schemas

import (
	"maps"
	"slices"
)

// EventTypes lists every event type of the contract, sorted, for the external tests to cover each one.
var EventTypes = slices.Sorted(maps.Keys(payloadFactories))
