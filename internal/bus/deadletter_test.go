package bus_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// counterValue reads the counter name of the process's registry with labels, 0 when it has no such series.
func counterValue(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := observe.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
	series:
		for _, m := range family.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// poisonSubject is where the poison messages of these tests are stored: a workload subject the placer reads.
const poisonSubject = "fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.poison"

// ceHeader is the binary-mode CloudEvents envelope of a workload.changed event, sound whatever data follows,
// with a header of another kind, which a dead letter must keep under its prefix.
func ceHeader() nats.Header { return ceHeaderOf(schemas.TypeWorkloadChanged) }

// ceHeaderOf is the binary-mode CloudEvents header of an event of eventType.
func ceHeaderOf(eventType string) nats.Header {
	h := nats.Header{}
	h.Set("ce-specversion", "1.0")
	h.Set("ce-id", "poison-1")
	h.Set("ce-type", eventType)
	h.Set("ce-source", "/test")
	h.Set("Content-Type", "application/json")
	h.Set("X-Trace", "trace-1")
	return h
}

// poisonWorkload is the encoded workload.changed event of a valid PyTorchJob named poison, which the handlers
// of these tests fail on.
func poisonWorkload(t *testing.T) (nats.Header, []byte) {
	t.Helper()
	_, payload := workloadEvent(t, "poison", "uid-poison", "1")
	e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", poisonSubject, "poison-1", payload)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(poisonSubject, e)
	if err != nil {
		t.Fatal(err)
	}
	msg.Header.Set("X-Trace", "trace-1")
	return msg.Header, msg.Data
}

// TestConsumeLoopSendsPoisonToDeadLetters: each kind of poison message ends in FLEETFLOW_DEAD on the consumer's
// subject, its data and headers kept, with where it came from and why it died, counted by reason; the good
// event published right behind it is handled all the same, and the GiveUp hook runs for handler failures
// only, as before dead letters.
func TestConsumeLoopSendsPoisonToDeadLetters(t *testing.T) {
	bus.SetRetryDelay(t, 10*time.Millisecond)
	nodeJSON := `{"cluster":"east","name":"n1","allocatable":{"cpu":"4"},"ready":true,"pods":1}`
	tests := []struct {
		name string
		// header and data are the poison message; nil header: poisonWorkload's
		header nats.Header
		data   string
		// fail is the handler's answer to the poison workload on each attempt
		fail       func(attempt uint64) error
		reason     string
		errorHas   string
		attempts   uint64
		givesUp    bool
		cloudEvent bool
	}{
		{name: "not JSON", header: ceHeader(), data: "not json", reason: schemas.DeadUndecodable,
			errorHas: "payload is not valid JSON", attempts: 1, cloudEvent: true},
		{name: "not a CloudEvent", header: nats.Header{"X-Trace": []string{"trace-1"}}, data: "\x00\xffgarbage",
			reason: schemas.DeadUndecodable, errorHas: "no ce-specversion header", attempts: 1},
		{name: "JSON of the wrong shape", header: ceHeader(), data: `{"object":"a string"}`, reason: schemas.DeadUndecodable,
			errorHas: "object: want a JSON object", attempts: 1, cloudEvent: true},
		{name: "payload of another type", header: ceHeader(), data: nodeJSON, reason: schemas.DeadInvalid,
			errorHas: "invalid payload: object: required", attempts: 1, cloudEvent: true},
		{name: "a node claiming 10^18 GPUs", header: ceHeaderOf(schemas.TypeNodeChanged),
			data:   `{"cluster":"east","name":"n1","allocatable":{"nvidia.com/gpu":"1e18"},"ready":true,"pods":1}`,
			reason: schemas.DeadInvalid, errorHas: "allocatable.nvidia.com/gpu: 1e18 is more than a node can plausibly offer",
			attempts: 1, cloudEvent: true},
		{name: "a status of 3 MiB", header: ceHeaderOf(schemas.TypeWorkloadStatus),
			data: `{"cluster":"east","workload":{"apiVersion":"v1","kind":"X","name":"n","uid":"u"},"status":{"m":"` +
				strings.Repeat("x", 3<<20) + `"}}`,
			reason: schemas.DeadInvalid, errorHas: "is more than the 2.0 MiB an event of this type may carry", attempts: 1, cloudEvent: true},
		{name: "handler panics", fail: func(uint64) error { panic("boom") }, reason: schemas.DeadPanic,
			errorHas: "handler panicked: boom", attempts: 1, givesUp: true, cloudEvent: true},
		{name: "permanent error", fail: func(uint64) error { return bus.Permanent(errors.New("forbidden by policy")) },
			reason: schemas.DeadPermanent, errorHas: "forbidden by policy", attempts: 1, givesUp: true, cloudEvent: true},
		{name: "fails every attempt", fail: func(a uint64) error { return errors.New("apiserver unavailable, attempt " + strconv.FormatUint(a, 10)) },
			reason: schemas.DeadExhausted, errorHas: "attempt 8", attempts: schemas.MaxDeliver, givesUp: true, cloudEvent: true},
	}
	for _, tt := range tests {
		for _, batched := range []bool{false, true} {
			name := tt.name
			if batched {
				name += " batched"
			}
			t.Run(name, func(t *testing.T) {
				_, js := startJetStream(t)
				ctx := t.Context()
				log, logs := testLogger(t)
				consumer, stream, _ := placerConsumer(t, js, log)
				handled := &handledNames{}
				var mu sync.Mutex
				var gaveUp []error
				loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, DeadLetters: js,
					Handle: func(ctx context.Context, d bus.Delivery) error {
						if d.Payload.(*schemas.WorkloadChanged).Ref().Name == "poison" {
							return tt.fail(d.Attempt)
						}
						return handled.handle(ctx, d)
					},
					GiveUp: func(_ context.Context, _ bus.Delivery, err error) {
						mu.Lock()
						defer mu.Unlock()
						gaveUp = append(gaveUp, err)
					},
				}
				if batched {
					loop.Flush = func(context.Context) error { return nil }
				}
				counted := map[string]string{"consumer": schemas.ConsumerPlacer, "reason": tt.reason}
				before := counterValue(t, "fleetflow_dead_letters_total", counted)
				runLoop(t, ctx, loop)

				header, data := tt.header, []byte(tt.data)
				if header == nil {
					header, data = poisonWorkload(t)
				}
				msg := &nats.Msg{Subject: poisonSubject, Header: header, Data: data}
				ack, err := js.PublishMsg(ctx, msg, jetstream.WithMsgID("poison-msg"))
				if err != nil {
					t.Fatal(err)
				}
				publishWorkloads(t, bus.NewPublisher(js), "after")

				eventually(t, "the event behind the poison handled", func() bool { return len(handled.names()) == 1 })
				dead, err := js.Stream(ctx, schemas.StreamDead)
				if err != nil {
					t.Fatal(err)
				}
				var letter *jetstream.RawStreamMsg
				eventually(t, "the dead letter stored", func() bool {
					letter, err = dead.GetLastMsgForSubject(ctx, schemas.DeadLetterSubject(schemas.ConsumerPlacer))
					return err == nil
				})
				h := letter.Header
				for header, want := range map[string]string{
					schemas.HeaderDeadSubject:                                poisonSubject,
					schemas.HeaderDeadStream:                                 stream,
					schemas.HeaderDeadSequence:                               strconv.FormatUint(ack.Sequence, 10),
					schemas.HeaderDeadConsumer:                               schemas.ConsumerPlacer,
					schemas.HeaderDeadAttempts:                               strconv.FormatUint(tt.attempts, 10),
					schemas.HeaderDeadReason:                                 tt.reason,
					schemas.HeaderDeadOriginalPrefix + "X-Trace":             "trace-1",
					schemas.HeaderDeadOriginalPrefix + jetstream.MsgIDHeader: "poison-msg",
					jetstream.MsgIDHeader:                                    schemas.DeadLetterID(stream, ack.Sequence, schemas.ConsumerPlacer),
				} {
					if got := h.Get(header); got != want {
						t.Errorf("header %s = %q, want %q", header, got, want)
					}
				}
				if cause := h.Get(schemas.HeaderDeadError); !strings.Contains(cause, tt.errorHas) || strings.ContainsAny(cause, "\r\n") {
					t.Errorf("error header %q, want one line holding %q", cause, tt.errorHas)
				}
				if at, err := time.Parse(time.RFC3339Nano, h.Get(schemas.HeaderDeadTime)); err != nil || time.Since(at) > time.Minute {
					t.Errorf("time header %q: %v, want the time it died", h.Get(schemas.HeaderDeadTime), err)
				}
				if tt.cloudEvent && (h.Get("ce-type") != header.Get("ce-type") || h.Get("ce-id") != "poison-1" ||
					h.Get("Content-Type") != "application/json") {
					t.Errorf("CloudEvents headers not kept as they were: %v", h)
				}
				if string(letter.Data) != string(data) {
					t.Errorf("data %q, want the original %q", letter.Data, data)
				}
				if got := counterValue(t, "fleetflow_dead_letters_total", counted) - before; got != 1 {
					t.Errorf("fleetflow_dead_letters_total{reason=%q} went up by %v, want 1", tt.reason, got)
				}
				eventually(t, "no pending or unacknowledged messages", func() bool {
					info, err := consumer.Info(ctx)
					return err == nil && info.NumPending == 0 && info.NumAckPending == 0
				})
				mu.Lock()
				defer mu.Unlock()
				if (len(gaveUp) == 1) != tt.givesUp || len(gaveUp) > 1 {
					t.Errorf("GiveUp called with %v, want it once: %v", gaveUp, tt.givesUp)
				}
				if !strings.Contains(logs.String(), "stored a dead letter") {
					t.Errorf("the dead letter was not logged:\n%s", logs.String())
				}
			})
		}
	}
}

// twicePublisher publishes every message twice, as a loop does whose terminate was lost and whose message
// came back and died again.
type twicePublisher struct{ jetstream.JetStream }

func (p twicePublisher) PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	if _, err := p.JetStream.PublishMsg(ctx, msg, opts...); err != nil {
		return nil, err
	}
	return p.JetStream.PublishMsg(ctx, msg, opts...)
}

// TestDeadLettersAreStoredOnce: a message that dies twice (its terminate lost, then redelivered) leaves one
// dead letter, and one that cannot be stored (no dead-letter stream) is logged, counted, and terminated anyway,
// the event behind it handled.
func TestDeadLettersAreStoredOnce(t *testing.T) {
	tests := []struct {
		name        string
		dropStream  bool
		publisher   func(js jetstream.JetStream) bus.DeadLetterPublisher
		wantStored  uint64
		wantErrors  float64
		wantLogLine string
	}{
		{name: "stored twice", publisher: func(js jetstream.JetStream) bus.DeadLetterPublisher { return twicePublisher{js} },
			wantStored: 1, wantLogLine: "duplicate=true"},
		{name: "no dead-letter stream", dropStream: true,
			publisher:  func(js jetstream.JetStream) bus.DeadLetterPublisher { return js },
			wantErrors: 1, wantLogLine: "dead letter not stored; terminating the message anyway"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, js := startJetStream(t)
			ctx := t.Context()
			log, logs := testLogger(t)
			consumer, _, _ := placerConsumer(t, js, log)
			if tt.dropStream {
				if err := js.DeleteStream(ctx, schemas.StreamDead); err != nil {
					t.Fatal(err)
				}
			}
			handled := &handledNames{}
			loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, DeadLetters: tt.publisher(js), Handle: handled.handle}
			errorsCounted := map[string]string{"consumer": schemas.ConsumerPlacer}
			before := counterValue(t, "fleetflow_dead_letter_errors_total", errorsCounted)
			runLoop(t, ctx, loop)
			if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: poisonSubject, Header: ceHeader(), Data: []byte("not json")}); err != nil {
				t.Fatal(err)
			}
			publishWorkloads(t, bus.NewPublisher(js), "after")
			eventually(t, "the event behind the poison handled", func() bool { return len(handled.names()) == 1 })
			eventually(t, "the poison message terminated", func() bool {
				info, err := consumer.Info(ctx)
				return err == nil && info.NumPending == 0 && info.NumAckPending == 0
			})
			if !strings.Contains(logs.String(), tt.wantLogLine) {
				t.Errorf("log lacks %q:\n%s", tt.wantLogLine, logs.String())
			}
			if got := counterValue(t, "fleetflow_dead_letter_errors_total", errorsCounted) - before; got != tt.wantErrors {
				t.Errorf("fleetflow_dead_letter_errors_total went up by %v, want %v", got, tt.wantErrors)
			}
			if tt.dropStream {
				return
			}
			dead, err := js.Stream(ctx, schemas.StreamDead)
			if err != nil {
				t.Fatal(err)
			}
			info, err := dead.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != tt.wantStored {
				t.Errorf("the dead-letter stream holds %d messages, want %d", info.State.Msgs, tt.wantStored)
			}
		})
	}
}

// runLoop runs loop until t ends, then stops it and reports an error it ended with. The loop stops before the
// cleanups registered earlier run (SetRetryDelay's restore among them): no loop reads the retry delay then.
func runLoop(t *testing.T, ctx context.Context, loop *bus.ConsumeLoop) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("loop ended with %v", err)
		}
	})
}
