package jsonenc

import (
	"encoding/json"
	"math"
	"testing"

	"pgregory.net/rapid"
)

// unstructuredValue draws what an unstructured object can hold, with strings that exercise every escaping
// rule (quotes, backslashes, control characters, HTML characters, U+2028, invalid UTF-8).
func unstructuredValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 7
		if depth <= 0 {
			kinds = 5
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
			return rapid.Int64().Draw(t, "int64")
		case 5:
			n := rapid.IntRange(0, 4).Draw(t, "mapLen")
			m := map[string]any{}
			for range n {
				m[rapid.String().Draw(t, "key")] = unstructuredValue(depth-1).Draw(t, "value")
			}
			return m
		default:
			n := rapid.IntRange(0, 4).Draw(t, "sliceLen")
			s := make([]any, n)
			for i := range s {
				s[i] = unstructuredValue(depth-1).Draw(t, "item")
			}
			return s
		}
	})
}

// TestAppendMatchesEncodingJSON: the fast encoder is only useful if it writes exactly what
// encoding/json writes, since both encodings of an object may be compared or hashed.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := unstructuredValue(3).Draw(t, "value")
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		got, err := Append(nil, v)
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
		if string(got) != string(want) {
			t.Fatalf("Append = %s\nencoding/json = %s", got, want)
		}
	})
}

func TestAppendRejectsWhatJSONCannotCarry(t *testing.T) {
	for _, v := range []any{math.NaN(), math.Inf(1), map[string]any{"spec": []any{math.Inf(-1)}}, json.Number("12abc")} {
		if got, err := Append(nil, v); err == nil {
			t.Errorf("Append(%v) = %s, want an error", v, got)
		}
	}
	// Types beyond the unstructured set go through encoding/json.
	got, err := Append(nil, map[string]any{"labels": map[string]string{"b": "2", "a": "1"}, "n": json.Number("7")})
	if err != nil || string(got) != `{"labels":{"a":"1","b":"2"},"n":7}` {
		t.Errorf("Append = %s, %v", got, err)
	}
}

func BenchmarkAppend(b *testing.B) {
	obj := benchObject()
	b.Run("Append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = Append(buf[:0], obj)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(obj)
		}
	})
}

// benchObject is a PyTorchJob of the size the pipeline benchmark publishes (about 1.4 kB of JSON).
func benchObject() map[string]any {
	var obj map[string]any
	if err := json.Unmarshal([]byte(`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"train-0042",
	"namespace":"team-a","uid":"5d0e7c1c-1111-4c4c-9c9c-000000000042","resourceVersion":"123456","generation":1,
	"labels":{"app":"train","team":"a"},"annotations":{"owner":"ml-platform"}},"spec":{"pytorchReplicaSpecs":{
	"Master":{"replicas":1,"restartPolicy":"OnFailure","template":{"spec":{"containers":[{"name":"pytorch",
	"image":"registry.example.com/train:1.2.3","args":["--epochs","10","--lr","0.001"],"resources":{"requests":
	{"cpu":"8","memory":"64Gi","nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}],"tolerations":[{"key":
	"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}},"Worker":{"replicas":3,"restartPolicy":"OnFailure",
	"template":{"spec":{"containers":[{"name":"pytorch","image":"registry.example.com/train:1.2.3","args":["--epochs",
	"10","--lr","0.001"],"resources":{"requests":{"cpu":"8","memory":"64Gi","nvidia.com/gpu":"8"},"limits":
	{"nvidia.com/gpu":"8"}}}],"tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}]}}}}},
	"status":{"conditions":[{"type":"Created","status":"True","lastTransitionTime":"2026-11-30T04:00:00Z"}]}}`), &obj); err != nil {
		panic(err)
	}
	return obj
}
