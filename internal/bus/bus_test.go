package bus_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// startJetStream embeds a server on a random port with storage in the test's temp dir.
func startJetStream(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	nc, js, err := bus.Connect(srv.ClientURL(), t.Name())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc, js
}

func testLogger(t *testing.T) (*slog.Logger, *logbuf.Buffer) {
	buf := &logbuf.Buffer{}
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func workloadEvent(t *testing.T, name, uid, rv string) (string, *schemas.WorkloadChanged) {
	t.Helper()
	payload := &schemas.WorkloadChanged{Object: map[string]any{
		"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
		"metadata": map[string]any{"name": name, "namespace": "team-a", "uid": uid, "resourceVersion": rv},
	}}
	return schemas.WorkloadSubject(payload.Ref()), payload
}

// placerConsumer provisions fleetflow's streams on js and returns the placer's durable consumer on them.
func placerConsumer(t *testing.T, js jetstream.JetStream, log *slog.Logger) (jetstream.Consumer, string, jetstream.ConsumerConfig) {
	t.Helper()
	if err := bus.ProvisionStreams(t.Context(), js, streams.DefaultOptions(), log); err != nil {
		t.Fatal(err)
	}
	stream, cfg := streams.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(t.Context(), js, stream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return consumer, stream, cfg
}

// handledNames is a Handler that records the names of the workloads it handles, in order.
type handledNames struct {
	mu   sync.Mutex
	seen []string
}

func (h *handledNames) handle(_ context.Context, d bus.Delivery) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, d.Payload.(*schemas.WorkloadChanged).Ref().Name)
	return nil
}

// names is a copy of what was handled so far.
func (h *handledNames) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// publishWorkloads publishes, for each name, the workload.changed event of a PyTorchJob of that name at
// resourceVersion 1, as the control-plane producer would.
func publishWorkloads(t *testing.T, pub *bus.Publisher, names ...string) {
	t.Helper()
	for _, name := range names {
		subject, payload := workloadEvent(t, name, "uid-"+name, "1")
		e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, schemas.WorkloadChangedID(payload.Ref(), "1"), payload)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(t.Context(), subject, e); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCodecRoundTrip(t *testing.T) {
	subject, payload := workloadEvent(t, "llama.finetune", "u1", "7")
	e, err := codec.NewEvent(schemas.TypeWorkloadChanged, schemas.SourceControlPlaneProducer, subject,
		schemas.WorkloadChangedID(payload.Ref(), "7"), payload)
	if err != nil {
		t.Fatal(err)
	}
	e.SetExtension("traceparent", "00-abc-def-01")
	msg, err := bus.Encode(subject, e)
	if err != nil {
		t.Fatal(err)
	}
	if got := msg.Header.Get("ce-type"); got != schemas.TypeWorkloadChanged {
		t.Errorf("ce-type header = %q", got)
	}
	decoded, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	if decoded.ID() != e.ID() || decoded.Type() != e.Type() || decoded.Source() != e.Source() ||
		decoded.Subject() != e.Subject() || !decoded.Time().Equal(e.Time()) || string(decoded.Data()) != string(e.Data()) {
		t.Errorf("round trip changed the event:\n got %v\nwant %v", decoded, e)
	}
	if decoded.Extensions()["traceparent"] != "00-abc-def-01" {
		t.Errorf("extension lost: %v", decoded.Extensions())
	}
	p, err := codec.DecodePayload(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.(*schemas.WorkloadChanged).Ref().Name; got != "llama.finetune" {
		t.Errorf("payload name = %q", got)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := func() nats.Header {
		h := nats.Header{}
		h.Set("ce-specversion", "1.0")
		h.Set("ce-id", "x")
		h.Set("ce-type", schemas.TypeWorkloadDeleted)
		h.Set("ce-source", "/test")
		return h
	}
	cases := []struct {
		name    string
		header  func() nats.Header
		wantErr string
	}{
		{"no headers", func() nats.Header { return nil }, "no ce-specversion"},
		{"unknown spec version", func() nats.Header { h := valid(); h.Set("ce-specversion", "9.9"); return h }, "unsupported ce-specversion"},
		{"missing id", func() nats.Header { h := valid(); h.Del("ce-id"); return h }, "id"},
		{"missing source", func() nats.Header { h := valid(); h.Del("ce-source"); return h }, "source"},
		{"bad time", func() nats.Header { h := valid(); h.Set("ce-time", "yesterday"); return h }, "ce-time"},
		// Read by their lower-case names only, these would be dropped, or leave to map order which value counts.
		{"attribute in capitals", func() nats.Header { h := valid(); h.Set("Ce-Subject", "s"); return h },
			`cloudevent "x": header Ce-Subject: attributes are read in lower case only, as ce-subject`},
		{"extension in two spellings", func() nats.Header { h := valid(); h.Set("ce-Trace", "1"); h.Set("ce-trace", "2"); return h },
			`cloudevent "x": headers ce-Trace and ce-trace both set extension trace`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := bus.Decode(tc.header(), []byte(`{}`))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Decode error = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestProvisionStreamsIsIdempotent(t *testing.T) {
	_, js := startJetStream(t)
	ctx := t.Context()
	log, logs := testLogger(t)
	opts := streams.DefaultOptions()
	if err := bus.ProvisionStreams(ctx, js, opts, log); err != nil {
		t.Fatal(err)
	}
	before := map[string]*jetstream.StreamInfo{}
	for _, cfg := range streams.Configs(opts) {
		s, err := js.Stream(ctx, cfg.Name)
		if err != nil {
			t.Fatalf("stream %s missing after provisioning: %v", cfg.Name, err)
		}
		before[cfg.Name] = s.CachedInfo()
	}
	provisioned := strings.Count(logs.String(), "provisioned stream")
	if err := bus.ProvisionStreams(ctx, js, opts, log); err != nil {
		t.Fatal(err)
	}
	if again := strings.Count(logs.String(), "provisioned stream"); again != provisioned {
		t.Errorf("second provisioning changed %d streams, want 0", again-provisioned)
	}
	for name, info := range before {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		after := s.CachedInfo()
		if !after.Created.Equal(info.Created) {
			t.Errorf("stream %s was recreated", name)
		}
		a, _ := json.Marshal(after.Config)
		b, _ := json.Marshal(info.Config)
		if string(a) != string(b) {
			t.Errorf("stream %s config changed:\n%s\n%s", name, b, a)
		}
	}
}

func TestPublishDropsDuplicates(t *testing.T) {
	_, js := startJetStream(t)
	ctx := t.Context()
	log, _ := testLogger(t)
	if err := bus.ProvisionStreams(ctx, js, streams.DefaultOptions(), log); err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(js)
	subject, payload := workloadEvent(t, "a", "u1", "1")
	publish := func() *jetstream.PubAck {
		e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, schemas.WorkloadChangedID(payload.Ref(), "1"), payload)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := pub.Publish(ctx, subject, e)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	first, second := publish(), publish()
	if first.Duplicate || !second.Duplicate || first.Sequence != second.Sequence {
		t.Errorf("acks = %+v, %+v; want the second to be a duplicate of the first", first, second)
	}
	s, err := js.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("stream holds %d messages, want 1", info.State.Msgs)
	}
}

// TestConsumeLoopSurvivesBadMessages publishes garbage, a non-CloudEvent, a CloudEvent of an unknown type,
// an invalid payload and a panicking event, each ahead of a good event, and checks that the loop terminates
// each bad one with a logged reason and still handles every good one.
func TestConsumeLoopSurvivesBadMessages(t *testing.T) {
	nc, js := startJetStream(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log, logs := testLogger(t)
	consumer, _, _ := placerConsumer(t, js, log)

	handled := &handledNames{}
	loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, Handle: func(ctx context.Context, d bus.Delivery) error {
		if d.Payload.(*schemas.WorkloadChanged).Ref().Name == "panics" {
			panic("boom")
		}
		return handled.handle(ctx, d)
	}}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()

	pub := bus.NewPublisher(js)
	good := func(name string) { publishWorkloads(t, pub, name) }
	raw := func(header nats.Header, data string) {
		msg := nats.NewMsg("fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.raw")
		msg.Header = header
		msg.Data = []byte(data)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	ceHeader := func(eventType string) nats.Header {
		h := nats.Header{}
		h.Set("ce-specversion", "1.0")
		h.Set("ce-id", "id-"+eventType)
		h.Set("ce-type", eventType)
		h.Set("ce-source", "/test")
		h.Set("Content-Type", "application/json")
		return h
	}

	raw(nil, "\x00\xffgarbage")
	good("after-garbage")
	raw(nats.Header{"X-Other": []string{"1"}}, `{"not":"a cloudevent"}`)
	good("after-non-cloudevent")
	raw(ceHeader("com.example.unknown"), `{}`)
	good("after-unknown-type")
	raw(ceHeader(schemas.TypeWorkloadChanged), `{"object":{"kind":"PyTorchJob","metadata":{}}}`)
	good("after-invalid-payload")
	raw(ceHeader(schemas.TypeWorkloadChanged), `not json`)
	good("panics")
	good("after-panic")

	want := []string{"after-garbage", "after-non-cloudevent", "after-unknown-type", "after-invalid-payload", "after-panic"}
	eventually(t, "every good event handled", func() bool { return len(handled.names()) == len(want) })
	got := handled.names()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("handled[%d] = %q, want %q (all: %v)", i, got[i], want[i], got)
		}
	}
	for _, reason := range []string{
		"no ce-specversion header", "not a fleetflow event type", "object.metadata.apiVersion", "object.metadata.uid",
		"payload is not valid JSON", "handler panicked",
	} {
		if !strings.Contains(logs.String(), reason) {
			t.Errorf("log does not give reason %q:\n%s", reason, logs.String())
		}
	}
	// Nothing is left pending: every bad message was terminated, not left for redelivery.
	eventually(t, "no pending or unacknowledged messages", func() bool {
		info, err := consumer.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop ended with %v", err)
	}
	_ = nc
}

func TestConsumeLoopRetriesThenGivesUp(t *testing.T) {
	_, js := startJetStream(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log, _ := testLogger(t)
	consumer, _, _ := placerConsumer(t, js, log)
	var mu sync.Mutex
	attempts := map[string]int{}
	gaveUp := map[string]error{}
	loop := &bus.ConsumeLoop{Consumer: consumer, Log: log,
		Handle: func(_ context.Context, d bus.Delivery) error {
			name := d.Payload.(*schemas.WorkloadChanged).Ref().Name
			mu.Lock()
			defer mu.Unlock()
			attempts[name]++
			switch {
			case name == "forbidden":
				return bus.Permanent(errors.New("forbidden by policy"))
			case name == "flaky" && attempts[name] < 2:
				return errors.New("apiserver unavailable")
			}
			return nil
		},
		GiveUp: func(_ context.Context, d bus.Delivery, err error) {
			mu.Lock()
			defer mu.Unlock()
			gaveUp[d.Payload.(*schemas.WorkloadChanged).Ref().Name] = err
		},
	}
	go func() { _ = loop.Run(ctx) }()
	publishWorkloads(t, bus.NewPublisher(js), "forbidden", "flaky")
	eventually(t, "flaky retried to success and forbidden given up", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return attempts["flaky"] == 2 && gaveUp["forbidden"] != nil
	})
	mu.Lock()
	defer mu.Unlock()
	if attempts["forbidden"] != 1 {
		t.Errorf("a permanent error was retried: %d attempts", attempts["forbidden"])
	}
	if _, ok := gaveUp["flaky"]; ok {
		t.Errorf("gave up on a message that later succeeded")
	}
}

// TestStateStreamKeepsLastValuePerSubject: the state stream sources events and decisions and keeps only
// the newest message of each subject, which is what a restarted placer rebuilds from.
func TestStateStreamKeepsLastValuePerSubject(t *testing.T) {
	_, js := startJetStream(t)
	ctx := t.Context()
	log, _ := testLogger(t)
	if err := bus.ProvisionStreams(ctx, js, streams.DefaultOptions(), log); err != nil {
		t.Fatal(err)
	}
	pub := bus.NewPublisher(js)
	for _, rv := range []string{"1", "2", "3"} {
		for _, name := range []string{"a", "b"} {
			subject, payload := workloadEvent(t, name, "uid-"+name, rv)
			payload.Object["metadata"].(map[string]any)["resourceVersion"] = rv
			e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, schemas.WorkloadChangedID(payload.Ref(), rv), payload)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pub.Publish(ctx, subject, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	state, err := js.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "both subjects' last values in the state stream", func() bool {
		for _, name := range []string{"a", "b"} {
			subject, _ := workloadEvent(t, name, "", "")
			msg, err := state.GetLastMsgForSubject(ctx, subject)
			if err != nil {
				return false
			}
			e, err := bus.Decode(msg.Header, msg.Data)
			if err != nil || e.ID() != "workload-changed/uid-"+name+"/3/kubeflow.org/v1" {
				return false
			}
		}
		return true
	})
	info, err := state.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2 {
		t.Errorf("state stream holds %d messages, want 2 (one per subject)", info.State.Msgs)
	}
}

// TestConnectionEventsAreLogged: a subscription that cannot keep up drops messages, which nats.go reports only to
// an error handler; LogConnectionEvents logs it with the subject and how many were dropped. A deliberate close
// logs nothing.
func TestConnectionEventsAreLogged(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(srv.Shutdown)
	log, logs := testLogger(t)
	// nats.go runs the disconnect handler before the closed one, on one goroutine: once closed has run, a
	// disconnect log line would be there.
	closed := make(chan struct{})
	options := append(bus.LogConnectionEvents(log), nats.ClosedHandler(func(*nats.Conn) { close(closed) }))
	nc, _, err := bus.Connect(srv.ClientURL(), t.Name(), options...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	full := make(chan *nats.Msg, 1) // never read: the second message has nowhere to go
	if _, err := nc.ChanSubscribe("slow.subject", full); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := nc.Publish("slow.subject", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slow consumer logged", func() bool {
		out := logs.String()
		return strings.Contains(out, "nats reported an error") && strings.Contains(out, "subject=slow.subject") &&
			strings.Contains(out, "dropped=")
	})
	nc.Close()
	<-closed
	if strings.Contains(logs.String(), "nats disconnected") {
		t.Errorf("a deliberate close was logged as a disconnect:\n%s", logs.String())
	}
}

// TestProvisionStreamsGivesAnOlderStateStreamItsSourcesStart: a state stream created before its sources had a
// start gets one on the next provisioning, keeping what it holds.
func TestProvisionStreamsGivesAnOlderStateStreamItsSourcesStart(t *testing.T) {
	_, js := startJetStream(t)
	ctx := t.Context()
	log, _ := testLogger(t)
	opts := streams.DefaultOptions()
	for _, cfg := range streams.Configs(opts) {
		for _, s := range cfg.Sources {
			s.OptStartSeq = 0 // as the streams were defined before
		}
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	subject, payload := workloadEvent(t, "a", "u1", "1")
	e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, "changed-1", payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewPublisher(js).Publish(ctx, subject, e); err != nil {
		t.Fatal(err)
	}
	state, err := js.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for state.CachedInfo().State.Msgs != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the event never reached the state stream")
		}
		time.Sleep(10 * time.Millisecond)
		if _, err := state.Info(ctx); err != nil {
			t.Fatal(err)
		}
	}
	created := state.CachedInfo().Created

	if err := bus.ProvisionStreams(ctx, js, opts, log); err != nil {
		t.Fatal(err)
	}
	info, err := state.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range info.Config.Sources {
		if s.OptStartSeq != 1 {
			t.Errorf("source %s starts at %d after provisioning, want 1", s.Name, s.OptStartSeq)
		}
	}
	if !info.Created.Equal(created) || info.State.Msgs != 1 {
		t.Errorf("the state stream was recreated or lost messages: created %v (was %v), %d messages", info.Created, created, info.State.Msgs)
	}
}
