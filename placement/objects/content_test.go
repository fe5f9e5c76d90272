package objects

import (
	"encoding/json"
	"testing"
)

// TestGenerationOf: a workload's generation is what tells the scheduler that a placed workload changed its
// spec, so it must be read from objects decoded from the bus (numbers are float64) as well as from clients.
func TestGenerationOf(t *testing.T) {
	cases := []struct {
		name       string
		generation any
		want       int64
	}{
		{"decoded from JSON", float64(7), 7},
		{"from a client", int64(7), 7},
		{"an int", 7, 7},
		{"a json.Number", json.Number("7"), 7},
		{"missing", nil, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := map[string]any{"name": "web"}
			if tc.generation != nil {
				meta["generation"] = tc.generation
			}
			if got := GenerationOf(map[string]any{"metadata": meta}); got != tc.want {
				t.Errorf("generationOf = %d, want %d", got, tc.want)
			}
		})
	}
	// Through the bus: an event's object is decoded from JSON, and the store must see its generation.
	var decoded map[string]any
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"web","generation":3}}`), &decoded); err != nil {
		t.Fatal(err)
	}
	if got := GenerationOf(decoded); got != 3 {
		t.Errorf("generation of a JSON-decoded object = %d, want 3", got)
	}
}
