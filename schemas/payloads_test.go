package schemas

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodesAsEncodingJSONWould fails t unless ObjectChanged's own decoder gives what encoding/json gives for a
// plain struct of the same shape: the same object, or an error for both. ObjectJSON, when decoding sets it,
// must be the same object as the event carried it.
func decodesAsEncodingJSONWould(t *testing.T, data []byte) {
	t.Helper()
	var want struct {
		Object map[string]any `json:"object"`
	}
	wantErr := json.Unmarshal(data, &want)
	var got ObjectChanged
	err := json.Unmarshal(data, &got)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%q: error %v, encoding/json: %v", data, err, wantErr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got.Object, want.Object) {
		t.Fatalf("%q: object %#v, encoding/json: %#v", data, got.Object, want.Object)
	}
	if got.ObjectJSON != nil {
		var fromJSON map[string]any
		if err := json.Unmarshal(got.ObjectJSON, &fromJSON); err != nil || !reflect.DeepEqual(fromJSON, got.Object) {
			t.Fatalf("%q: ObjectJSON %q decodes to %#v (%v), the object is %#v", data, got.ObjectJSON, fromJSON, err, got.Object)
		}
	}
}

var objectChangedCases = []string{
	`{"object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"},"data":{"k":"v"}}}`,
	`{"Object":{"kind":"Pod"}}`,
	`{"OBJECT":{"kind":"Pod"},"other":[1,2]}`,
	`{"object":null}`,
	`{}`,
	`{"object":{"n":1e3,"list":[true,null,"\u00e9"]}}`,
	`{"object":[1]}`,
	`{"object":"text"}`,
	`[]`,
	`{"object":{}`,
	`not json`,
	// Named twice: encoding/json merges the objects in order, a null drops them, and any other value fails.
	`{"object":{"a":1,"c":1},"object":{"b":2,"c":2}}`,
	`{"object":{"a":1},"Object":{"b":2}}`,
	`{"Object":{"a":1},"OBJECT":{"b":2}}`,
	`{"object":{"a":1},"object":null}`,
	`{"object":null,"object":{"b":2}}`,
	`{"object":[1],"object":{}}`,
	`{"object":{},"object":"x"}`,
}

// TestObjectChangedKeepsTheObjectsBytes: decoding keeps the bytes of the object as the event carried them, for
// a receiver that keeps objects encoded, when one member holds the whole object.
func TestObjectChangedKeepsTheObjectsBytes(t *testing.T) {
	cases := []struct {
		data, want string
	}{
		{data: `{"object":{"kind":"Pod", "spec":{}}}`, want: `{"kind":"Pod", "spec":{}}`},
		{data: `{"other":1,"Object": {"kind":"Pod"} }`, want: `{"kind":"Pod"}`},
		{data: `{"object":{"a":1},"object":{"b":2}}`},
		{data: `{"object":null}`},
	}
	for _, tc := range cases {
		t.Run(tc.data, func(t *testing.T) {
			var got ObjectChanged
			if err := json.Unmarshal([]byte(tc.data), &got); err != nil {
				t.Fatal(err)
			}
			if string(got.ObjectJSON) != tc.want {
				t.Fatalf("ObjectJSON = %q, want %q", got.ObjectJSON, tc.want)
			}
		})
	}
}

// TestObjectChangedDecodesAsEncodingJSONWould: well-formed payloads and refused ones.
func TestObjectChangedDecodesAsEncodingJSONWould(t *testing.T) {
	for _, data := range objectChangedCases {
		t.Run(data, func(t *testing.T) { decodesAsEncodingJSONWould(t, []byte(data)) })
	}
}

// FuzzObjectChangedDecode: the hand-written decoder of the commonest payload agrees with encoding/json on
// every input.
func FuzzObjectChangedDecode(f *testing.F) {
	for _, data := range objectChangedCases {
		f.Add([]byte(data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return // events are far smaller; a bigger input only slows the fuzzer
		}
		decodesAsEncodingJSONWould(t, data)
	})
}
