package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
	"github.com/fleetflow/fleetflow/schemas"
)

// emptyStreams starts an embedded server holding fleetflow's streams and no event, and returns its URL.
func emptyStreams(t *testing.T) string {
	t.Helper()
	return bustest.JetStream(t).Conn().ConnectedUrl()
}

// runAudit runs "fleetflow audit tail" with args and returns its standard error.
func runAudit(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCommand()
	root.SetArgs(append([]string{"audit", "tail"}, args...))
	var stderr strings.Builder
	root.SetOut(&strings.Builder{})
	root.SetErr(&stderr)
	err := root.ExecuteContext(t.Context())
	return stderr.String(), err
}

// TestAuditTailSaysWhenItFindsNothing: a tail that prints no event says so on stderr, with or without a
// workload, and a KIND/NAME selector that matches nothing is reminded that it names a cluster-scoped workload.
func TestAuditTailSaysWhenItFindsNothing(t *testing.T) {
	url := emptyStreams(t)
	tests := []struct {
		name    string
		args    []string
		want    string
		notWant string
	}{
		{"every event", nil, "audit: no events in the streams\n", ""},
		{"since", []string{"--since", "1h"}, "audit: no events in the streams in the last 1h\n", ""},
		{"a namespaced workload", []string{"--workload", "PyTorchJob/team-a/job"},
			"audit: no events about PyTorchJob/team-a/job in the streams;", "cluster-scoped"},
		{"KIND/NAME", []string{"--workload", "PyTorchJob/job"},
			"KIND/NAME names a cluster-scoped workload, a namespaced one is KIND/NAMESPACE/NAME", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stderr, err := runAudit(t, append([]string{"--nats-url", url}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(stderr, tt.want) || (tt.notWant != "" && strings.Contains(stderr, tt.notWant)) {
				t.Errorf("stderr %q, want it to hold %q and not %q", stderr, tt.want, tt.notWant)
			}
		})
	}
}

// TestAuditTailRefusesBadSelectors: a --workload that cannot name a workload is refused before connecting.
func TestAuditTailRefusesBadSelectors(t *testing.T) {
	tests := []struct{ workload, want string }{
		{"PyTorchJob//job", `--workload: workload "PyTorchJob//job": the namespace is empty; a cluster-scoped workload is KIND[.GROUP]/NAME`},
		{"PyTorchJob./team-a/job", `--workload: workload "PyTorchJob./team-a/job": the group after "PyTorchJob." is empty; leave the dot out for any group`},
		{"job", `--workload: workload "job": want KIND[.GROUP]/NAMESPACE/NAME or KIND[.GROUP]/NAME`},
		{"/team-a/job", `--workload: workload "/team-a/job": kind and name are required`},
		{"PyTorchJob/team-a/", `--workload: workload "PyTorchJob/team-a/": kind and name are required`},
	}
	for _, tt := range tests {
		t.Run(tt.workload, func(t *testing.T) {
			_, err := runAudit(t, "--nats-url", "nats://127.0.0.1:1", "--workload", tt.workload)
			if err == nil || err.Error() != tt.want {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

// TestAuditTailOnAServerWithoutFleetflowsStreams: a server no fleetflow part has used (a wrong --nats-url)
// is named as such, not only as a JetStream API error.
func TestAuditTailOnAServerWithoutFleetflowsStreams(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	for _, args := range [][]string{nil, {"--follow"}, {"--workload", "PyTorchJob/team-a/job", "--since", "1h"}} {
		_, err := runAudit(t, append([]string{"--nats-url", srv.ClientURL()}, args...)...)
		want := "audit FLEETFLOW_EVENTS: the server has no such stream: no fleetflow part has used it yet, or it is not the server fleetflow uses"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error containing %q", args, err, want)
		}
	}
}

// TestAuditRecordsSayTheSameInJSONAndYAML: a tail's record is one JSON line, or one YAML document, with the same
// fields either way, so a follow streams in both.
func TestAuditRecordsSayTheSameInJSONAndYAML(t *testing.T) {
	event := cloudevents.New()
	event.SetID("e-1")
	event.SetType(schemas.TypeClusterHeartbeat)
	event.SetSource("test")
	if err := event.SetData(cloudevents.ApplicationJSON, map[string]any{"cluster": "east"}); err != nil {
		t.Fatal(err)
	}
	r := audit.AuditRecord{Stream: schemas.StreamEvents, Sequence: 7, Subject: schemas.ClusterHeartbeatSubject("east"),
		Stored: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), Event: event}
	var asJSON, asYAML strings.Builder
	for _, out := range []struct {
		format outputFormat
		w      *strings.Builder
	}{{outputJSON, &asJSON}, {outputYAML, &asYAML}, {outputJSON, &asJSON}, {outputYAML, &asYAML}} {
		if err := writeAuditRecord(out.w, out.format, r); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(asJSON.String(), "\n"), "\n")
	docs := strings.Split(strings.TrimPrefix(asYAML.String(), "---\n"), "---\n")
	if len(lines) != 2 || len(docs) != 2 {
		t.Fatalf("%d JSON lines and %d YAML documents for 2 records:\n%s\n%s", len(lines), len(docs), asJSON.String(), asYAML.String())
	}
	fromYAML, err := sigsyaml.YAMLToJSON([]byte(docs[0]))
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a["sequence"] != float64(7) {
		t.Errorf("JSON %v and YAML %v differ, or lack the sequence", a, b)
	}
	if _, err := runAudit(t, "--nats-url", "nats://127.0.0.1:1", "-o", "xml"); exitCode(err) != 2 {
		t.Errorf("-o xml: %v, want a usage error", err)
	}
}
