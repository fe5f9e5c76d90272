package main

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/schemas"
)

// publishDeadLetter stores a dead letter as a consumer loop writes it (schemas/deadletters.go).
func publishDeadLetter(t *testing.T, js jetstream.JetStream, consumer, reason, cause, subject string, seq, attempts uint64,
	header nats.Header, data string) {
	t.Helper()
	msg := nats.NewMsg(schemas.DeadLetterSubject(consumer))
	for name, values := range header {
		msg.Header[name] = values
	}
	msg.Header.Set(schemas.HeaderDeadSubject, subject)
	stream := schemas.StreamEvents
	if schemas.IsDecision(subject) {
		stream = schemas.StreamDecisions
	}
	msg.Header.Set(schemas.HeaderDeadStream, stream)
	msg.Header.Set(schemas.HeaderDeadSequence, strconv.FormatUint(seq, 10))
	msg.Header.Set(schemas.HeaderDeadConsumer, consumer)
	msg.Header.Set(schemas.HeaderDeadAttempts, strconv.FormatUint(attempts, 10))
	msg.Header.Set(schemas.HeaderDeadReason, reason)
	msg.Header.Set(schemas.HeaderDeadError, cause)
	msg.Header.Set(schemas.HeaderDeadTime, time.Date(2026, 3, 1, 10, 0, int(seq), 0, time.UTC).Format(time.RFC3339Nano))
	msg.Data = []byte(data)
	if _, err := js.PublishMsg(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
}

// runAuditDead runs "fleetflow audit dead" with args and returns its standard output and error.
func runAuditDead(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCommand()
	root.SetArgs(append([]string{"audit", "dead"}, args...))
	var out, errOut strings.Builder
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

// TestAuditDeadListsDeadLetters: audit dead lists what the dead-letter stream holds, for every consumer or
// one, as a table or as a JSON list (empty when nothing matches), and says on stderr when the table is empty.
func TestAuditDeadListsDeadLetters(t *testing.T) {
	js := bustest.JetStream(t)
	url := js.Conn().ConnectedUrl()
	ce := nats.Header{}
	ce.Set("ce-specversion", "1.0")
	ce.Set("ce-type", schemas.TypeWorkloadChanged)
	ce.Set("ce-id", "w-1")
	ce.Set(schemas.HeaderDeadOriginalPrefix+"X-Trace", "t1")
	publishDeadLetter(t, js, schemas.ConsumerPlacer, schemas.DeadUndecodable, "cloudevent w-1: payload is not valid JSON",
		"fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.a", 7, 1, ce, "not json")
	publishDeadLetter(t, js, schemas.ApplierConsumerName("east"), schemas.DeadExhausted,
		"giving up after attempt 8: apiserver unavailable "+strings.Repeat("x", 200),
		"fleetflow.decisions.east.kubeflow_org.PyTorchJob.team-a.b", 9, 8, nil, "{}")
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	header := "TIME                      CONSUMER      REASON       ATTEMPTS  STREAM/SEQ             SUBJECT" +
		"                                                     BYTES  ERROR\n"
	placerRow := "2026-03-01T10:00:07.000Z  placer        undecodable  1         FLEETFLOW_EVENTS/7     " +
		"fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.a  8      cloudevent w-1: payload is not valid JSON\n"
	applierRow := "2026-03-01T10:00:09.000Z  applier-east  exhausted    8         FLEETFLOW_DECISIONS/9  " +
		"fleetflow.decisions.east.kubeflow_org.PyTorchJob.team-a.b   2      giving up after attempt 8: apiserver unavailable " +
		strings.Repeat("x", 50) + "…\n"
	tests := []struct {
		name       string
		args       []string
		wantOut    string
		wantErr    string
		wantJSON   []deadLetterJSON
		jsonOutput bool
	}{
		{name: "table", args: nil, wantOut: header + placerRow + applierRow},
		{name: "table of one consumer", args: []string{"--consumer", "placer", "--since", "1h"},
			wantOut: "TIME                      CONSUMER  REASON       ATTEMPTS  STREAM/SEQ          SUBJECT" +
				"                                                     BYTES  ERROR\n" +
				"2026-03-01T10:00:07.000Z  placer    undecodable  1         FLEETFLOW_EVENTS/7  " +
				"fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.a  8      cloudevent w-1: payload is not valid JSON\n"},
		{name: "empty table", args: []string{"--consumer", "status"},
			wantErr: "audit: no dead letters of consumer status in FLEETFLOW_DEAD\n"},
		{name: "empty table since", args: []string{"--since", future},
			wantErr: "audit: no dead letters in FLEETFLOW_DEAD since " + future + "\n"},
		{name: "json", args: []string{"-o", "json"}, jsonOutput: true, wantJSON: []deadLetterJSON{
			{Time: time.Date(2026, 3, 1, 10, 0, 7, 0, time.UTC), Consumer: "placer", Reason: "undecodable",
				Error: "cloudevent w-1: payload is not valid JSON", Subject: "fleetflow.events.workload.kubeflow_org.PyTorchJob.team-a.a",
				Stream: "FLEETFLOW_EVENTS", Sequence: 7, Attempts: 1, PayloadBytes: 8, DeadSequence: 1,
				EventType: schemas.TypeWorkloadChanged, EventID: "w-1", Headers: nats.Header{"ce-specversion": {"1.0"},
					"ce-type": {schemas.TypeWorkloadChanged}, "ce-id": {"w-1"}, "X-Trace": {"t1"}}},
			{Time: time.Date(2026, 3, 1, 10, 0, 9, 0, time.UTC), Consumer: "applier-east", Reason: "exhausted",
				Error:   "giving up after attempt 8: apiserver unavailable " + strings.Repeat("x", 200),
				Subject: "fleetflow.decisions.east.kubeflow_org.PyTorchJob.team-a.b", Stream: "FLEETFLOW_DECISIONS", Sequence: 9,
				Attempts: 8, PayloadBytes: 2, DeadSequence: 2},
		}},
		{name: "json of one consumer", args: []string{"-o", "json", "--consumer", "applier-east"}, jsonOutput: true,
			wantJSON: []deadLetterJSON{{Time: time.Date(2026, 3, 1, 10, 0, 9, 0, time.UTC), Consumer: "applier-east",
				Reason: "exhausted", Error: "giving up after attempt 8: apiserver unavailable " + strings.Repeat("x", 200),
				Subject: "fleetflow.decisions.east.kubeflow_org.PyTorchJob.team-a.b", Stream: "FLEETFLOW_DECISIONS", Sequence: 9,
				Attempts: 8, PayloadBytes: 2, DeadSequence: 2}}},
		{name: "json of nothing is an empty list", args: []string{"-o", "json", "--since", future}, jsonOutput: true,
			wantOut: "[]\n", wantJSON: []deadLetterJSON{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := runAuditDead(t, append([]string{"--nats-url", url}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if stderr != tt.wantErr {
				t.Errorf("stderr %q, want %q", stderr, tt.wantErr)
			}
			if !tt.jsonOutput {
				if stdout != tt.wantOut {
					t.Errorf("stdout:\n%s\nwant:\n%s", stdout, tt.wantOut)
				}
				return
			}
			if tt.wantOut != "" && stdout != tt.wantOut {
				t.Errorf("stdout %q, want %q", stdout, tt.wantOut)
			}
			var got []deadLetterJSON
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("not a JSON list: %v\n%s", err, stdout)
			}
			if len(got) != len(tt.wantJSON) {
				t.Fatalf("%d dead letters, want %d:\n%s", len(got), len(tt.wantJSON), stdout)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], tt.wantJSON[i]) {
					t.Errorf("dead letter %d:\n got %+v\nwant %+v", i, got[i], tt.wantJSON[i])
				}
			}
		})
	}
}

// TestAuditDeadRefusesWhatItCannotRead: a bad output or --since is refused before connecting, and a server
// without the dead-letter stream is named as such.
func TestAuditDeadRefusesWhatItCannotRead(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"output", []string{"--nats-url", "nats://127.0.0.1:1", "-o", "xml"}, `invalid argument "xml" for "-o, --output" flag: want table, json or yaml`},
		{"since", []string{"--nats-url", "nats://127.0.0.1:1", "--since", "yesterday"}, `--since "yesterday": want an RFC 3339 time`},
		{"no stream", []string{"--nats-url", emptyServer(t)}, "audit FLEETFLOW_DEAD: the server has no such stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runAuditDead(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// emptyServer starts an embedded server with no stream at all, as one no fleetflow part has used, and returns
// its URL.
func emptyServer(t *testing.T) string {
	t.Helper()
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}
