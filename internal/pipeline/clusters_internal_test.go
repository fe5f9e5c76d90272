package pipeline

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
