package jsonenc

import (
	"encoding/json"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/fleetflow/fleetflow/internal/jsontest"
)

// TestAppendMatchesEncodingJSON: the fast encoder is only useful if it writes exactly what
// encoding/json writes, since both encodings of an object may be compared or hashed.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := jsontest.Value(3).Draw(t, "value")
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
