package eventtest_test

import (
	"testing"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// TestPayloadsAreValid: what the builders make passes the validation a producer's events pass.
func TestPayloadsAreValid(t *testing.T) {
	for name, p := range map[string]schemas.Payload{
		"object":     eventtest.Object("example.com/v1", "Widget", "team", "w", map[string]any{"a": "b"}, nil),
		"cluster":    eventtest.Cluster("east", map[string]any{"name": "east"}),
		"policy":     eventtest.Policy("fill", eventtest.FillInOrder("east", "west")),
		"deployment": eventtest.Deployment("web", "1"),
		"node":       eventtest.Node("east", "n1", "8"),
	} {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
