package app

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/internal/logbuf"
)

// TestClusterManagerLogsEachReasonOnce: a Cluster that cannot run is looked at again each resync, and its
// reason is logged when it is new, not at every resync.
func TestClusterManagerLogsEachReasonOnce(t *testing.T) {
	logs := &logbuf.Buffer{}
	m := &ClusterManager{Log: slog.New(slog.NewTextHandler(logs, nil)), running: map[string]*runningCluster{},
		unreachable: map[string]string{}}
	log := m.Log.With("cluster", "east")
	missing := errors.New("Secret fleetflow-system/east not found")
	for range 3 {
		m.cannotRun(t.Context(), log, "east", "KubeconfigUnavailable", "cannot reach cluster: kubeconfig unavailable", missing)
	}
	m.cannotRun(t.Context(), log, "east", "KubeconfigInvalid", "cannot reach cluster: kubeconfig does not parse", errors.New("bad yaml"))
	m.stop("east") // the Cluster was deleted: a new one with the same name is reported afresh
	m.cannotRun(t.Context(), log, "east", "KubeconfigUnavailable", "cannot reach cluster: kubeconfig unavailable", missing)
	if got := strings.Count(logs.String(), "kubeconfig unavailable"); got != 2 {
		t.Errorf("the missing Secret was logged %d times, want once before the Cluster was deleted and once after:\n%s", got, logs.String())
	}
	if got := strings.Count(logs.String(), "does not parse"); got != 1 {
		t.Errorf("the new reason was logged %d times, want once:\n%s", got, logs.String())
	}
}

// TestUnusableKubeconfigSaysWhatIsWrong: a Cluster's kubeconfig that parses but cannot be used is refused with
// what it lacks, not with client-go's advice to set KUBERNETES_MASTER.
func TestUnusableKubeconfigSaysWhatIsWrong(t *testing.T) {
	const cluster = `clusters: [{name: east, cluster: {server: "https://east:6443"}}]
`
	tests := []struct {
		name, kubeconfig, want string
	}{
		{"empty", ``, "names no cluster"},
		{"garbage", `{[`, "does not parse"},
		{"no current context", cluster + `contexts: [{name: east, context: {cluster: east}}]`, "has no current-context"},
		{"unknown current context", cluster + `contexts: [{name: east, context: {cluster: east}}]
current-context: west`, `current-context "west" is not one of its contexts`},
		{"context naming no cluster", cluster + `contexts: [{name: east, context: {cluster: west}}]
current-context: east`, `context "east" names cluster "west", which it does not define`},
		{"usable", cluster + `contexts: [{name: east, context: {cluster: east}}]
current-context: east`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := restConfigOf([]byte(tt.kubeconfig))
			switch {
			case tt.want == "" && (err != nil || cfg.Host != "https://east:6443"):
				t.Errorf("got %v, %v; want the config of https://east:6443", cfg, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "KUBERNETES_MASTER")):
				t.Errorf("got %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
