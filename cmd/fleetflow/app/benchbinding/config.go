package benchbinding

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/placement/scheduler"
)

// Mode is one configuration measured: how the placer fits gangs, and how the clusters' kube-scheduler scores
// nodes.
type Mode struct {
	Name string `json:"name"`
	// Fit is the placer's fit mode.
	Fit scheduler.FitMode `json:"fit"`
	// Scoring is localfleet.Options.SchedulerScoring ("" is kube-scheduler's default, LeastAllocated).
	Scoring string `json:"scoring"`
	// Pin sets the bench's policy's pinPods: each pod is pinned to the node the placer packed it on.
	Pin bool `json:"pin"`
}

// Modes are the modes --modes names.
var Modes = []Mode{
	{Name: "nodes-least", Fit: scheduler.FitNodes, Scoring: localfleet.ScoringDefault},
	{Name: "nodes-most", Fit: scheduler.FitNodes, Scoring: localfleet.ScoringMostAllocated},
	{Name: "summed-least", Fit: scheduler.FitSummed, Scoring: localfleet.ScoringDefault},
	{Name: "nodes-pinned", Fit: scheduler.FitNodes, Scoring: localfleet.ScoringDefault, Pin: true},
}

// ModeNames lists the names of Modes.
func ModeNames() []string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = m.Name
	}
	return names
}

// Config is one run of the bench.
type Config struct {
	// Seed drives the fragmentation of the nodes and the gangs.
	Seed int64
	// Workloads is how many gangs are submitted per mode.
	Workloads int
	// Clusters is the number of workload clusters; NodesPerCluster their 8-GPU nodes.
	Clusters, NodesPerCluster int
	// SubmitWorkers is how many gangs are submitted to the control plane at once: 1 sends them one after
	// another, more makes a burst in which the placer decides many gangs before their pods exist.
	SubmitWorkers int
	// MaxPods and MaxGPUs bound each gang's pods and each pod's GPUs; both are drawn uniformly from 1.
	MaxPods, MaxGPUs int
	// Kinds are the workload kinds the gangs are drawn from (Kinds' names).
	Kinds []string
	// Modes are the names of the modes to run, in order.
	Modes []string
	// BindTimeout is how long after a placed workload's first pod was created all its pods may take to be
	// bound; a pod unbound by then counts as Pending.
	BindTimeout time.Duration
	// Timeout bounds each mode's run, fleet start included.
	Timeout time.Duration
	// BinDir holds the fleet's binaries; Dir the fleets (one folder per mode, a temporary one when empty).
	BinDir, Dir string
	// Log gets the pipeline's and the fleet's logs; Progress one line per step.
	Log      *slog.Logger
	Progress io.Writer
}

// DefaultConfig is a run of a few minutes per mode.
func DefaultConfig() Config {
	return Config{Seed: 1, Workloads: 200, Clusters: 3, NodesPerCluster: 8, MaxPods: 8, MaxGPUs: GPUsPerNode, SubmitWorkers: 1, Kinds: []string{"job"},
		Modes: ModeNames(), BindTimeout: 30 * time.Second, Timeout: 10 * time.Minute, BinDir: "bin"}
}

// validate refuses a configuration the run cannot honour.
func (c *Config) validate() error {
	var errs []error
	if c.Workloads < 1 {
		errs = append(errs, fmt.Errorf("--workloads %d: must be at least 1", c.Workloads))
	}
	if c.Clusters < 1 {
		errs = append(errs, fmt.Errorf("--clusters %d: must be at least 1", c.Clusters))
	}
	if c.NodesPerCluster < 1 {
		errs = append(errs, fmt.Errorf("--nodes-per-cluster %d: must be at least 1", c.NodesPerCluster))
	}
	if c.MaxPods < 1 || c.MaxGPUs < 1 || c.MaxGPUs > GPUsPerNode {
		errs = append(errs, fmt.Errorf("--max-pods %d, --max-gpus %d: want at least 1 pod, and 1 to %d GPUs", c.MaxPods, c.MaxGPUs, GPUsPerNode))
	}
	if c.SubmitWorkers < 1 {
		errs = append(errs, fmt.Errorf("--submit-workers %d: must be at least 1", c.SubmitWorkers))
	}
	if c.BindTimeout <= 0 || c.Timeout <= 0 {
		errs = append(errs, errors.New("--bind-timeout and --timeout must be positive"))
	}
	for _, k := range c.Kinds {
		if kindNamed(k) == nil {
			errs = append(errs, fmt.Errorf("--kinds: unknown kind %q (known: %s)", k, strings.Join(KindNames(), ", ")))
		}
	}
	if len(c.Kinds) == 0 {
		errs = append(errs, errors.New("--kinds: give at least one kind"))
	}
	for _, m := range c.Modes {
		if !slices.Contains(ModeNames(), m) {
			errs = append(errs, fmt.Errorf("--modes: unknown mode %q (known: %s)", m, strings.Join(ModeNames(), ", ")))
		}
	}
	if len(c.Modes) == 0 {
		errs = append(errs, errors.New("--modes: give at least one mode"))
	}
	return errors.Join(errs...)
}

func modeNamed(name string) Mode {
	i := slices.IndexFunc(Modes, func(m Mode) bool { return m.Name == name })
	return Modes[i]
}
