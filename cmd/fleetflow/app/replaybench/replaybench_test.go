package replaybench

import (
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/internal/placementbench"
)

// TestRunSmall replays a small synthetic history end to end: every recorded output is reproduced, and the
// replay feeds exactly the inputs the history holds.
func TestRunSmall(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lifetime int
	}{{"workloads stay", 0}, {"workloads finish", 10}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{FleetSize: placementbench.FleetSize{Clusters: 3, NodesPerCluster: 4, Workloads: 50, GPUNodePercent: 50},
				Lifetime: tc.lifetime, Seed: 1, Step: DefaultConfig().Step}
			res, err := Run(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if res.Divergences != 0 {
				t.Fatalf("%d divergences, the first: %+v", res.Divergences, res.First)
			}
			if res.Events != res.Mix.InputTotal {
				t.Errorf("replayed %d events, synthesized %d inputs", res.Events, res.Mix.InputTotal)
			}
			if got := res.Mix.Inputs["workload.changed"]; got != cfg.Workloads {
				t.Errorf("%d workload.changed inputs, want %d", got, cfg.Workloads)
			}
			if res.Recorded == 0 || res.Reproduced != res.Recorded {
				t.Errorf("reproduced %d of %d recorded outputs", res.Reproduced, res.Recorded)
			}
			if deleted := res.Mix.Inputs["workload.deleted"]; (tc.lifetime > 0) != (deleted > 0) {
				t.Errorf("%d workload.deleted inputs with lifetime %d", deleted, tc.lifetime)
			}
		})
	}
}

// TestConfigErrorsNameTheFlag: a bad setting is refused before anything is synthesized, by the flag a user typed.
func TestConfigErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Config)
		flag string
	}{
		{func(c *Config) { c.Clusters = 0 }, "--clusters 0"},
		{func(c *Config) { c.NodesPerCluster = -3 }, "--nodes-per-cluster -3"},
		{func(c *Config) { c.Workloads = 0 }, "--workloads 0"},
		{func(c *Config) { c.Lifetime = -1 }, "--lifetime -1"},
		{func(c *Config) { c.GPUNodePercent = 120 }, "--gpu-node-percent 120"},
	} {
		cfg := DefaultConfig()
		tc.edit(&cfg)
		if _, err := Run(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("Run(%+v) = %v, want an error naming %s", cfg, err, tc.flag)
		}
	}
}
