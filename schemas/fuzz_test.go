package schemas_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// maxFuzzInput bounds a fuzzed payload: events are far smaller, and a bigger input only slows the fuzzer.
const maxFuzzInput = 64 << 10

// TestSamplesCoverEveryEventType keeps the fuzz corpora complete: a new event type needs a sample.
func TestSamplesCoverEveryEventType(t *testing.T) {
	samples := eventtest.Samples()
	for _, eventType := range schemas.EventTypes {
		p, ok := samples[eventType]
		if !ok {
			t.Errorf("no sample payload for %s", eventType)
			continue
		}
		if _, err := schemas.MarshalData(eventType, p); err != nil {
			t.Errorf("sample for %s: %v", eventType, err)
		}
	}
}

// samePayload compares payloads by meaning: quantities by value, times by instant, nil and empty alike (the
// encoding omits both). ObjectJSON is left out: it is the bytes the payload was decoded from, never written.
var samePayload = conversion.EqualitiesOrDie(
	func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 },
	func(a, b time.Time) bool { return a.Equal(b) },
	func(a, b metav1.Time) bool { return a.Equal(&b) },
	func(a, b json.RawMessage) bool { return true },
)

// FuzzDecodeData: the data of an event of any type decodes to a valid payload, the same each time, or fails
// with a message; a payload that decodes encodes again, and that encoding decodes to the same payload and
// encodes to the same bytes.
func FuzzDecodeData(f *testing.F) {
	samples := eventtest.Samples()
	for i, eventType := range schemas.EventTypes {
		data, err := schemas.MarshalData(eventType, samples[eventType])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), data)
		f.Add(uint8(i+1), data) // the data of one type read as another's
	}
	f.Add(uint8(0), []byte(`{"cluster":"c","name":"n","ready":true,"pods":0,"allocatable":{"cpu":"lots"}}`))
	f.Add(uint8(0), []byte(`{"object":{"metadata":{"name":"a","uid":"u","resourceVersion":"1"},"apiVersion":"v1","kind":"K"},"OBJECT":{}}`))
	f.Fuzz(func(t *testing.T, typeIndex uint8, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		eventType := schemas.EventTypes[int(typeIndex)%len(schemas.EventTypes)]
		payload, err := schemas.DecodeData(eventType, data)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%s: decoding %q failed with an empty message", eventType, data)
			}
			return
		}
		if twice, err := schemas.DecodeData(eventType, data); err != nil || !samePayload.DeepEqual(payload, twice) {
			t.Fatalf("%s: the same data decoded differently (%v):\n%#v\n%#v", eventType, err, payload, twice)
		}
		encoded, err := schemas.MarshalData(eventType, payload)
		if err != nil {
			t.Fatalf("%s: a decoded payload does not encode: %v\ndata: %q", eventType, err, data)
		}
		again, err := schemas.DecodeData(eventType, encoded)
		if err != nil {
			t.Fatalf("%s: the encoding of a decoded payload does not decode: %v\nencoded: %s", eventType, err, encoded)
		}
		if !samePayload.DeepEqual(payload, again) {
			t.Fatalf("%s: decode(encode(p)) != p\np:     %#v\nagain: %#v\nencoded: %s", eventType, payload, again, encoded)
		}
		reencoded, err := schemas.MarshalData(eventType, again)
		if err != nil || !bytes.Equal(encoded, reencoded) {
			t.Fatalf("%s: encoding is not stable (%v):\n%s\n%s", eventType, err, encoded, reencoded)
		}
	})
}
