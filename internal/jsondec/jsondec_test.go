package jsondec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/fleetflow/fleetflow/internal/jsontest"
)

// reference is what encoding/json makes of data for an `any` target.
func reference(data []byte) (any, error) {
	var v any
	err := json.Unmarshal(data, &v)
	return v, err
}

// sameAsEncodingJSON fails t unless Decode and encoding/json agree on data: the same value, or both an error.
func sameAsEncodingJSON(t interface {
	Helper()
	Fatalf(string, ...any)
}, data []byte) {
	t.Helper()
	want, wantErr := reference(data)
	got, err := Decode(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("Decode(%q): error %v, encoding/json: %v", data, err, wantErr)
	}
	if err == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) = %#v, encoding/json: %#v", data, got, want)
	}
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	cases := []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e3`, `-1E-2`, `1e400`, `123456789012345678901234567890`,
		` {"a" : [1, 2 ,{"b":null}] } `, `{"a":1,"a":2}`, `"plain"`, `"esc\"\\\/\b\f\n\r\t"`, `"\u00e9\u2028"`,
		`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00\ud83d"`, `"\ud83dx"`, `"\ud83d\u0041"`, "\"bad\xffutf8\xc3\"", `"ü✓😀"`,
		"\"\xef\xbf\xbd\"", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","labels":{"a":"b"}},"spec":{"replicas":3}}`,
		// rejected by both
		``, ` `, `{`, `[`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `[1 2]`, `01`, `-`, `1.`, `1e`, `1e+`, `.5`, `+1`,
		`tru`, `nul`, `truex`, `"abc`, "\"a\x01b\"", `"\x"`, `"\u12"`, `"\u12g4"`, `{1:2}`, `{"a":1}x`, `[]]`,
		"\xef\xbb\xbf{}", `NaN`, `Infinity`, `"\ud83d\u12"`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
	}
	for _, c := range cases {
		sameAsEncodingJSON(t, []byte(c))
	}
}

// TestDecodeAgreesOnRandomDocuments encodes random values (some with hand-written escapes), then corrupts
// some of them, and checks that Decode agrees with encoding/json on every document.
func TestDecodeAgreesOnRandomDocuments(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		data, err := json.Marshal(jsontest.Value(4).Draw(t, "value"))
		if err != nil {
			t.Skip("not encodable:", err)
		}
		if rapid.Bool().Draw(t, "escape unicode") {
			data = []byte(strings.ReplaceAll(string(data), "ü", `\u00fc`))
		}
		if len(data) > 0 && rapid.Bool().Draw(t, "corrupt") {
			i := rapid.IntRange(0, len(data)-1).Draw(t, "at")
			switch rapid.IntRange(0, 2).Draw(t, "how") {
			case 0:
				data = append(data[:i:i], data[i+1:]...)
			case 1:
				data[i] = rapid.SampledFrom([]byte(`{}[],:"\ -+.e0u1fx`)).Draw(t, "byte")
			default:
				data = data[:i]
			}
		}
		sameAsEncodingJSON(t, data)
	})
}

func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"a":[1,"b",null,true]}`, `"\ud83d\ude00"`, `1e400`, "\"\xff\"", `[`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAsEncodingJSON(t, data) })
}

func TestDecodeObject(t *testing.T) {
	if _, err := DecodeObject([]byte(`[1]`)); err == nil {
		t.Error("DecodeObject accepted an array")
	}
	m, err := DecodeObject([]byte(`{"kind":"Pod"}`))
	if err != nil || m["kind"] != "Pod" {
		t.Errorf("DecodeObject = %v, %v", m, err)
	}
}

func BenchmarkDecode(b *testing.B) {
	doc := []byte(`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"train","namespace":"ml",` +
		`"labels":{"team":"a","app.kubernetes.io/name":"train"},"uid":"0b1c","resourceVersion":"12","generation":3},` +
		`"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch",` +
		`"image":"ghcr.io/x/train:1.0","args":["--epochs","10"],"resources":{"requests":{"cpu":"8","memory":"64Gi",` +
		`"nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}],"tolerations":[{"key":"nvidia.com/gpu",` +
		`"operator":"Exists","effect":"NoSchedule"}]}}},"Worker":{"replicas":3,"template":{"spec":{"containers":` +
		`[{"name":"pytorch","image":"ghcr.io/x/train:1.0","resources":{"requests":{"cpu":"8","memory":"64Gi",` +
		`"nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}]}}}}}}`)
	b.Run("jsondec", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := Decode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := reference(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
