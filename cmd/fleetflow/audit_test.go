package main

import (
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/bus/bustest"
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
