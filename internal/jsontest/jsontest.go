package jsontest

import (
	"math"

	"pgregory.net/rapid"
)

// Value draws what an unstructured Kubernetes object can hold, nested up to depth maps and slices: strings
// that exercise every escaping rule (quotes, backslashes, control characters, HTML characters, U+2028,
// invalid UTF-8), numbers at the edges of float64 formatting, any finite float64, and int64s.
func Value(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 8
		if depth <= 0 {
			kinds = 6
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.SampledFrom([]string{"", "plain", `q"uote`, `back\slash`, "tab\tnew\nline\r", "\b\f\x01\x1f\x7f",
				"<a href='x'>&amp;</a>", "line\u2028sep\u2029", "bad\xffutf8\xc3", "ünïcødé ✓ 😀"}).Draw(t, "string") +
				rapid.String().Draw(t, "suffix")
		case 3:
			return rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1.5, 3.14159, 1e-7, 1e-6, 123456789, 1e20, 1e21, 1.5e300, -2e-300,
				math.MaxFloat64, math.SmallestNonzeroFloat64}).Draw(t, "float")
		case 4:
			return rapid.Float64Range(-math.MaxFloat64, math.MaxFloat64).Draw(t, "number")
		case 5:
			return rapid.Int64().Draw(t, "int64")
		case 6:
			m := map[string]any{}
			for range rapid.IntRange(0, 4).Draw(t, "mapLen") {
				m[rapid.String().Draw(t, "key")] = Value(depth-1).Draw(t, "value")
			}
			return m
		default:
			s := make([]any, rapid.IntRange(0, 4).Draw(t, "sliceLen"))
			for i := range s {
				s[i] = Value(depth-1).Draw(t, "item")
			}
			return s
		}
	})
}
