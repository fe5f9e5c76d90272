package schemas

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestObjectChangedDecodesAsEncodingJSONWould: ObjectChanged's own decoder gives what encoding/json gives for
// a plain struct of the same shape, for well-formed payloads and for refused ones.
func TestObjectChangedDecodesAsEncodingJSONWould(t *testing.T) {
	type plain struct {
		Object map[string]any `json:"object"`
	}
	for _, data := range []string{
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
	} {
		var want plain
		wantErr := json.Unmarshal([]byte(data), &want)
		var got ObjectChanged
		err := json.Unmarshal([]byte(data), &got)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, encoding/json: %v", data, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got.Object, want.Object) {
			t.Errorf("%s: object %#v, encoding/json: %#v", data, got.Object, want.Object)
		}
		// ObjectJSON, when decoding sets it, is the same object as the event carried it.
		if err == nil && got.ObjectJSON != nil {
			var fromJSON map[string]any
			if err := json.Unmarshal(got.ObjectJSON, &fromJSON); err != nil || !reflect.DeepEqual(fromJSON, got.Object) {
				t.Errorf("%s: ObjectJSON %q decodes to %#v (%v), the object is %#v", data, got.ObjectJSON, fromJSON, err, got.Object)
			}
		}
		if err == nil && got.Object != nil && got.ObjectJSON == nil && strings.HasPrefix(data, `{"object":`) {
			t.Errorf("%s: decoding kept no ObjectJSON", data)
		}
	}
}
