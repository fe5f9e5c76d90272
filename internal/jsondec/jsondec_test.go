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

// TestDecodeObjectKeeping: the kept bytes are exactly the value of the top-level member named, the last one when
// it repeats (whose value the map holds); a member of that name deeper down is not it; none is nil.
func TestDecodeObjectKeeping(t *testing.T) {
	cases := []struct {
		name, doc, want string
		none            bool
	}{
		{name: "object value", doc: `{"object":{"kind":"Pod","spec":{"x":[1, 2]}},"other":1}`, want: `{"kind":"Pod","spec":{"x":[1, 2]}}`},
		{name: "spaces around stay out", doc: ` { "object" :  [1,2]  , "b":null } `, want: `[1,2]`},
		{name: "scalar", doc: `{"object":"s\u00e9"}`, want: `"s\u00e9"`},
		{name: "last of two", doc: `{"object":1,"object":{"a":2}}`, want: `{"a":2}`},
		{name: "nested member is not it", doc: `{"wrap":{"object":1}}`, none: true},
		{name: "absent", doc: `{"a":1}`, none: true},
		{name: "other case is not it", doc: `{"Object":1}`, none: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, kept, err := DecodeObjectKeeping([]byte(tc.doc), "object")
			if err != nil {
				t.Fatal(err)
			}
			if tc.none {
				if kept != nil {
					t.Fatalf("kept %q, want nothing", kept)
				}
				return
			}
			if string(kept) != tc.want {
				t.Fatalf("kept %q, want %q", kept, tc.want)
			}
			var fromKept any
			if err := json.Unmarshal(kept, &fromKept); err != nil || !reflect.DeepEqual(fromKept, m["object"]) {
				t.Fatalf("kept bytes decode to %#v (%v), the map holds %#v", fromKept, err, m["object"])
			}
		})
	}
	if _, _, err := DecodeObjectKeeping([]byte(`{"object":1`), "object"); err == nil {
		t.Error("a truncated document was accepted")
	}
}

// TestDecodeObjectKeepingOnRandomDocuments: whatever the value of the member, its kept bytes decode to what the
// map holds for it.
func TestDecodeObjectKeepingOnRandomDocuments(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := map[string]any{"object": jsontest.Value(3).Draw(t, "object"), "other": jsontest.Value(2).Draw(t, "other")}
		data, err := json.Marshal(doc)
		if err != nil {
			t.Skip("not encodable:", err)
		}
		m, kept, err := DecodeObjectKeeping(data, "object")
		if err != nil {
			t.Fatal(err)
		}
		var fromKept any
		if err := json.Unmarshal(kept, &fromKept); err != nil || !reflect.DeepEqual(fromKept, m["object"]) {
			t.Fatalf("kept %q decodes to %#v (%v), the map holds %#v", kept, fromKept, err, m["object"])
		}
	})
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
