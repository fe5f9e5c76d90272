package jsondec

import (
	"bytes"
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

// maxFuzzInput bounds a fuzzed document: what the decoder does on a long one it does on a short one too, and
// long ones only slow the fuzzer.
const maxFuzzInput = 64 << 10

// FuzzDecode: Decode agrees with encoding/json on every input, on the value and on whether it is refused.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{`{"a":[1,"b",null,true]}`, `"\ud83d\ude00"`, `1e400`, "\"\xff\"", `[`, string(podJob)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		sameAsEncodingJSON(t, data)
		if _, err := Decode(data); err != nil && err.Error() == "" {
			t.Fatalf("Decode(%q) failed with an empty message", data)
		}
	})
}

// lastMember is what encoding/json's token stream finds in a top-level object: how many members are named
// field without regard to case, and the value of the last one; ok is false when data is no object.
func lastMember(data []byte, field string) (matches int, last any, ok bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return 0, nil, false
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return 0, nil, false
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return 0, nil, false
		}
		if strings.EqualFold(tok.(string), field) {
			matches, last = matches+1, v
		}
	}
	return matches, last, true
}

// FuzzDecodeObjectKeeping: the map is encoding/json's, matches counts the members named field as
// encoding/json's token stream does, and the kept bytes decode to the last one's value.
func FuzzDecodeObjectKeeping(f *testing.F) {
	for _, seed := range []string{`{"object":{"kind":"Pod"},"other":1}`, `{"Object":1,"OBJECT":[2]}`, `{"wrap":{"object":1}}`,
		`{"object":1,"object":null}`, `{}`, `[]`, string(podJob)} {
		f.Add([]byte(seed), "object")
	}
	f.Add(podJob, "spec")
	f.Fuzz(func(t *testing.T, data []byte, field string) {
		if len(data) > maxFuzzInput || field == "" {
			return // "" keeps nothing
		}
		m, kept, matches, err := DecodeObjectKeeping(data, field)
		var want map[string]any
		wantErr := json.Unmarshal(data, &want)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("DecodeObjectKeeping(%q): error %v, encoding/json: %v", data, err, wantErr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(m, want) {
			t.Fatalf("DecodeObjectKeeping(%q) = %#v, encoding/json: %#v", data, m, want)
		}
		wantMatches, last, ok := lastMember(data, field)
		if !ok {
			t.Fatalf("encoding/json's token stream refuses %q, which both decoders take", data)
		}
		if matches != wantMatches {
			t.Fatalf("DecodeObjectKeeping(%q, %q): %d members so named, the token stream finds %d", data, field, matches, wantMatches)
		}
		if matches == 0 {
			if kept != nil {
				t.Fatalf("DecodeObjectKeeping(%q, %q) kept %q of no member", data, field, kept)
			}
			return
		}
		var fromKept any
		if err := json.Unmarshal(kept, &fromKept); err != nil || !reflect.DeepEqual(fromKept, last) {
			t.Fatalf("DecodeObjectKeeping(%q, %q) kept %q, which decodes to %#v (%v), want the last member's %#v", data, field, kept, fromKept, err, last)
		}
	})
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

// TestDecodeObjectKeeping: the kept bytes are exactly the value of the top-level member named, without regard
// to case as encoding/json matches a struct field, the last one when several are (whose value the map holds), and
// matches counts them; a member of that name deeper down is not it; none is nil.
func TestDecodeObjectKeeping(t *testing.T) {
	cases := []struct {
		name, doc, want string
		matches         int
	}{
		{name: "object value", doc: `{"object":{"kind":"Pod","spec":{"x":[1, 2]}},"other":1}`, want: `{"kind":"Pod","spec":{"x":[1, 2]}}`, matches: 1},
		{name: "spaces around stay out", doc: ` { "object" :  [1,2]  , "b":null } `, want: `[1,2]`, matches: 1},
		{name: "scalar", doc: `{"object":"s\u00e9"}`, want: `"s\u00e9"`, matches: 1},
		{name: "last of two", doc: `{"object":1,"object":{"a":2}}`, want: `{"a":2}`, matches: 2},
		{name: "other case", doc: `{"Object":1}`, want: `1`, matches: 1},
		{name: "two cases", doc: `{"OBJECT":1,"object":2}`, want: `2`, matches: 2},
		{name: "nested member is not it", doc: `{"wrap":{"object":1}}`},
		{name: "absent", doc: `{"a":1}`},
		{name: "another name", doc: `{"objects":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, kept, matches, err := DecodeObjectKeeping([]byte(tc.doc), "object")
			if err != nil {
				t.Fatal(err)
			}
			if matches != tc.matches {
				t.Fatalf("matches = %d, want %d", matches, tc.matches)
			}
			if tc.matches == 0 {
				if kept != nil {
					t.Fatalf("kept %q, want nothing", kept)
				}
				return
			}
			if string(kept) != tc.want {
				t.Fatalf("kept %q, want %q", kept, tc.want)
			}
			var fromKept any
			if err := json.Unmarshal(kept, &fromKept); err != nil {
				t.Fatalf("kept bytes %q do not decode: %v", kept, err)
			}
			for k, v := range m {
				if strings.EqualFold(k, "object") && reflect.DeepEqual(v, fromKept) {
					return
				}
			}
			t.Fatalf("kept bytes decode to %#v, which no member named object holds in %#v", fromKept, m)
		})
	}
	if _, _, _, err := DecodeObjectKeeping([]byte(`{"object":1`), "object"); err == nil {
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
		m, kept, _, err := DecodeObjectKeeping(data, "object")
		if err != nil {
			t.Fatal(err)
		}
		var fromKept any
		if err := json.Unmarshal(kept, &fromKept); err != nil || !reflect.DeepEqual(fromKept, m["object"]) {
			t.Fatalf("kept %q decodes to %#v (%v), the map holds %#v", kept, fromKept, err, m["object"])
		}
	})
}

// podJob is a PyTorchJob as a producer sends it.
var podJob = []byte(`{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"train","namespace":"ml",` +
	`"labels":{"team":"a","app.kubernetes.io/name":"train"},"uid":"0b1c","resourceVersion":"12","generation":3},` +
	`"spec":{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":{"spec":{"containers":[{"name":"pytorch",` +
	`"image":"ghcr.io/x/train:1.0","args":["--epochs","10"],"resources":{"requests":{"cpu":"8","memory":"64Gi",` +
	`"nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}],"tolerations":[{"key":"nvidia.com/gpu",` +
	`"operator":"Exists","effect":"NoSchedule"}]}}},"Worker":{"replicas":3,"template":{"spec":{"containers":` +
	`[{"name":"pytorch","image":"ghcr.io/x/train:1.0","resources":{"requests":{"cpu":"8","memory":"64Gi",` +
	`"nvidia.com/gpu":"8"},"limits":{"nvidia.com/gpu":"8"}}}]}}}}}}`)

func BenchmarkDecode(b *testing.B) {
	doc := podJob
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
