package benchbinding_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app/benchbinding"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

// slowBinding is the bind timeout of these tests: long enough that operators and kube-scheduler slowed by a
// loaded machine still count as binding, while a pod kube-scheduler finds no node for stays Pending past it.
const slowBinding = 2 * time.Minute

// TestPlacedGangsAreBound runs the binding check on a fleet of one cluster with a few gangs of 1-GPU pods,
// under kube-scheduler's default profile and under the bin-packing one fleetflow recommends
// (deploy/kubescheduler): every node of the fleet keeps a GPU free and no 1-GPU pod can be stranded by
// fragmentation, so kube-scheduler must bind every pod of every gang the placer placed. It fails when a placed
// gang is not fully bound, or when kube-scheduler does not start with the recommended configuration.
func TestPlacedGangsAreBound(t *testing.T) {
	binDir := localfleettest.RequireRunPods(t)
	for _, mode := range []string{"nodes-least", "nodes-most"} {
		t.Run(mode, func(t *testing.T) {
			unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()

			cfg := benchbinding.DefaultConfig()
			cfg.Workloads, cfg.Clusters, cfg.NodesPerCluster, cfg.MaxPods, cfg.MaxGPUs = 4, 1, 4, 2, 1
			cfg.Modes = []string{mode}
			cfg.BinDir, cfg.Dir = binDir, t.TempDir()
			cfg.Timeout = 5 * time.Minute
			cfg.BindTimeout = slowBinding
			cfg.Log = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			cfg.Progress = t.Output()
			res, err := benchbinding.Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(res.Modes) != 1 {
				t.Fatalf("%d modes measured, want 1", len(res.Modes))
			}
			m := res.Modes[0]
			if m.Placed == 0 {
				t.Fatalf("no gang placed (%d unschedulable)", m.Unschedulable)
			}
			if m.FullyBound != m.Placed || m.PodsPending != 0 || m.PodsMissing != 0 {
				t.Errorf("%d of %d placed gangs fully bound; %d pods pending, %d never created", m.FullyBound, m.Placed,
					m.PodsPending, m.PodsMissing)
			}
		})
	}
}
