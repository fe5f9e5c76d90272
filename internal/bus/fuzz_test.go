package bus_test

import (
	"bytes"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// headerBlock writes h as a NATS message's header block, the bytes nats.DecodeHeadersMsg reads.
func headerBlock(h nats.Header) []byte {
	var b bytes.Buffer
	b.WriteString("NATS/1.0\r\n")
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			b.WriteString(k + ": " + v + "\r\n")
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// FuzzDecode reads NATS messages as a consumer does, binary-mode CloudEvents: the header block, then Decode,
// then DecodePayload. Each step returns a result or an error with a message, never panics; an event Decode
// returns is the same event every time, and encodes (Encode) to a message that decodes to it again.
func FuzzDecode(f *testing.F) {
	for eventType, payload := range eventtest.Samples() {
		e, err := codec.NewEvent(eventType, "/fleetflow/fuzz", "fleetflow.events.fuzz", "id-"+eventType, payload)
		if err != nil {
			f.Fatal(err)
		}
		msg, err := bus.Encode(e.Subject(), e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(headerBlock(msg.Header), msg.Data)
	}
	f.Add([]byte("NATS/1.0\r\nce-specversion: 1.0\r\nce-id: a\r\nce-source: /s\r\nce-type: x\r\nce-time: yesterday\r\n\r\n"), []byte(`{}`))
	f.Add([]byte("NATS/1.0\r\nce-specversion: 1.0\r\nce-id: a\r\nce-source: /s\r\nce-type: x\r\nce-Trace: 1\r\nce-trace: 2\r\n\r\n"), []byte(`{}`))
	f.Fuzz(func(t *testing.T, block, data []byte) {
		if len(block)+len(data) > 64<<10 {
			return // messages are far smaller; a bigger input only slows the fuzzer
		}
		header, err := nats.DecodeHeadersMsg(block)
		if err != nil {
			return // the client refuses the message before fleetflow sees it
		}
		e, err := bus.Decode(header, data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("Decode failed with an empty message")
			}
			return
		}
		if again, err := bus.Decode(header, data); err != nil || !reflect.DeepEqual(again.Extensions(), e.Extensions()) {
			t.Fatalf("the same message decoded to extensions %v, then %v (%v)", e.Extensions(), again.Extensions(), err)
		}
		msg, err := bus.Encode("fleetflow.events.fuzz", e)
		if err != nil {
			t.Fatalf("a decoded event does not encode: %v", err)
		}
		back, err := bus.Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatalf("an encoded event does not decode: %v", err)
		}
		if back.ID() != e.ID() || back.Type() != e.Type() || back.Source() != e.Source() || back.Subject() != e.Subject() ||
			!back.Time().Equal(e.Time()) || back.DataSchema() != e.DataSchema() || back.DataContentType() != e.DataContentType() ||
			!bytes.Equal(back.Data(), e.Data()) || !reflect.DeepEqual(back.Extensions(), e.Extensions()) {
			t.Fatalf("the event changed on the way through a message:\n%v\n%v", e, back)
		}
		payload, err := codec.DecodePayload(e)
		if err != nil {
			if !strings.Contains(err.Error(), e.ID()) {
				t.Fatalf("error %q does not name event %q", err, e.ID())
			}
			return
		}
		if _, err := schemas.MarshalData(e.Type(), payload); err != nil {
			t.Fatalf("a decoded payload does not encode: %v", err)
		}
	})
}
