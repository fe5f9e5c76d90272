package codec_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// FuzzDecodePayload reads CloudEvents in structured JSON, as `fleetflow audit export` writes them and replay
// reads them back: DecodePayload returns a valid payload or an error naming the event, and a payload it
// returns makes a new event (NewEvent) that decodes, through JSON again, to a payload of the same encoding.
func FuzzDecodePayload(f *testing.F) {
	for eventType, payload := range eventtest.Samples() {
		e, err := codec.NewEvent(eventType, "/fleetflow/fuzz", "fleetflow.events.fuzz", "id-"+eventType, payload)
		if err != nil {
			f.Fatal(err)
		}
		data, err := json.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"specversion":"1.0","id":"a","source":"/s","type":"io.fleetflow.node.deleted.v1","datacontenttype":"text/plain","data":"x"}`))
	f.Add([]byte(`{"specversion":"1.0","id":"a","source":"/s","type":"io.fleetflow.node.deleted.v1","data_base64":"eyJjbHVzdGVyIjoiYyIsIm5hbWUiOiJuIn0="}`))
	f.Add([]byte(`{"specversion":"1.0","id":"a","source":"/s","type":"io.fleetflow.other.v1","data":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return // events are far smaller; a bigger input only slows the fuzzer
		}
		e := cloudevents.New()
		if json.Unmarshal(data, &e) != nil {
			return // not a CloudEvent: the SDK's reader refuses it before fleetflow sees it
		}
		payload, err := codec.DecodePayload(e)
		if err != nil {
			if e.Validate() == nil && !strings.Contains(err.Error(), e.ID()) {
				t.Fatalf("error %q does not name event %q", err, e.ID())
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		again, err := codec.NewEvent(e.Type(), e.Source(), e.Subject(), e.ID(), payload)
		if err != nil {
			t.Fatalf("a decoded %s payload makes no event: %v", e.Type(), err)
		}
		line, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("the new event does not encode: %v", err)
		}
		back := cloudevents.New()
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatalf("the new event does not read back: %v\n%s", err, line)
		}
		decoded, err := codec.DecodePayload(back)
		if err != nil {
			t.Fatalf("the new event's payload does not decode: %v\n%s", err, line)
		}
		first, err1 := schemas.MarshalData(e.Type(), payload)
		second, err2 := schemas.MarshalData(e.Type(), decoded)
		if err1 != nil || err2 != nil || !bytes.Equal(first, second) {
			t.Fatalf("the payload changed on the way through a new event (%v, %v):\n%s\n%s", err1, err2, first, second)
		}
	})
}
