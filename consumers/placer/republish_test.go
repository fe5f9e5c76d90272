package placer

import (
	"errors"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
)

// flakyStream answers the first publish as first says (nil: never), and every one sent again with an
// acknowledgement, counting them.
type flakyStream struct {
	asyncRecorder
	first       error
	silent      bool
	republished int
}

func (s *flakyStream) PublishAsync(subject string, _ cloudevents.Event) (jetstream.PubAckFuture, error) {
	f := &fakeFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: nats.NewMsg(subject)}
	if !s.silent {
		f.err <- s.first
	}
	return f, nil
}

func (s *flakyStream) Republish(msg *nats.Msg) (jetstream.PubAckFuture, error) {
	s.republished++
	f := &fakeFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: msg}
	f.ok <- &jetstream.PubAck{Stream: "test", Sequence: 1, Duplicate: true}
	return f, nil
}

// A publish no stream leader answered, or whose acknowledgement never came, is sent again and the batch
// succeeds; one the stream refused fails the batch, sent once.
func TestAwaitSendsUnansweredPublishesAgain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stream      *flakyStream
		republished int
		fails       bool
	}{
		{name: "no leader answered", stream: &flakyStream{first: nats.ErrNoResponders}, republished: 1},
		{name: "no response from stream", stream: &flakyStream{first: jetstream.ErrNoStreamResponse}, republished: 1},
		{name: "connection lost", stream: &flakyStream{first: nats.ErrDisconnected}, republished: 1},
		{name: "no acknowledgement", stream: &flakyStream{silent: true}, republished: 1},
		{name: "refused", stream: &flakyStream{first: errors.New("maximum payload exceeded")}, fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out publishing
			effect := lifecycle.Effect{Type: schemas.TypePlacerTick, Subject: schemas.SubjectPlacerTick, ID: "tick/1",
				Payload: &schemas.PlacerTick{Time: time.Unix(1, 0).UTC()}}
			if err := out.send(t.Context(), tc.stream, effect); err != nil {
				t.Fatal(err)
			}
			err := out.await(t.Context())
			if (err != nil) != tc.fails || err != nil && !strings.Contains(err.Error(), "maximum payload exceeded") {
				t.Errorf("await: %v, want failure %t", err, tc.fails)
			}
			if tc.stream.republished != tc.republished {
				t.Errorf("sent again %d times, want %d", tc.stream.republished, tc.republished)
			}
		})
	}
}
