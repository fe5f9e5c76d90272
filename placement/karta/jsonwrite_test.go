package karta

import (
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"testing"
)

// TestAppendJSONMatchesEncodingJSON: our writer and encoding/json agree on what the JSON means.
func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, 0, -7, 3.5, 1e20, 2.0, "plain", "quote\" backslash\\ newline\n tab\t bell\a",
		"unicode ✓ and invalid \xff", []any{1, "a", nil, []any{}}, map[string]any{"a": map[string]any{"b": []any{1.5}}},
		big.NewInt(0).Lsh(big.NewInt(1), 70), map[string]string{"typed": "map"},
	}
	for _, s := range corpusSamplesOrNil(t) {
		values = append(values, s)
	}
	for _, v := range values {
		ours, err := appendJSON(nil, v)
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		std, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(ours, &a); err != nil {
			t.Fatalf("our JSON %s does not parse: %v", ours, err)
		}
		if err := json.Unmarshal(std, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("ours %s\nstd  %s", ours, std)
		}
	}
	if _, err := appendJSON(nil, map[string]any{"x": math.Inf(1)}); err == nil {
		t.Error("infinity written as JSON")
	}
}

func corpusSamplesOrNil(t *testing.T) []map[string]any {
	var out []map[string]any
	t.Run("corpus", func(t *testing.T) {
		for _, s := range corpusSamples(t) {
			out = append(out, s.obj)
		}
	})
	return out
}
