package localfleet

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/deploy/kubescheduler"
)

// Scoring strategies of the workload clusters' kube-scheduler (Options.SchedulerScoring).
const (
	// ScoringDefault runs kube-scheduler with its default profile: NodeResourcesFit scores LeastAllocated,
	// which spreads pods over the emptiest nodes.
	ScoringDefault = ""
	// ScoringMostAllocated runs it with a profile whose NodeResourcesFit scores MostAllocated over cpu,
	// memory and nvidia.com/gpu: pods go to the fullest node that fits, which keeps whole GPU nodes free
	// for large pods (bin-packing).
	ScoringMostAllocated = "MostAllocated"
)

// schedulerConfigArgs writes the KubeSchedulerConfiguration of Options.SchedulerScoring into the cluster's
// directory and returns the flag that names it, none for the default profile. The bin-packing one is the
// configuration fleetflow recommends to users (deploy/kubescheduler), with the cluster's kubeconfig and no
// leader election: with --config kube-scheduler ignores --kubeconfig and --leader-elect.
func schedulerConfigArgs(clusterDir, kubeconfig, scoring string) ([]string, error) {
	switch scoring {
	case ScoringDefault:
		return nil, nil
	case ScoringMostAllocated:
	default:
		return nil, fmt.Errorf("scheduler scoring %q: want %q or %q", scoring, ScoringDefault, ScoringMostAllocated)
	}
	var config map[string]any
	if err := yaml.Unmarshal(kubescheduler.BinPacking, &config); err != nil {
		return nil, fmt.Errorf("deploy/kubescheduler/binpacking.yaml: %w", err)
	}
	config["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	config["leaderElection"] = map[string]any{"leaderElect": false}
	data, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(clusterDir, SchedulerBinary+".config.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return nil, err
	}
	return []string{"--config=" + path}, nil
}
