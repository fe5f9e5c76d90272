package localfleet

import (
	"fmt"
	"os"
	"path/filepath"
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
// directory and returns the flag that names it, none for the default profile. With --config kube-scheduler
// ignores --kubeconfig, so the file names the kubeconfig too; --leader-elect still applies.
func schedulerConfigArgs(clusterDir, kubeconfig, scoring string) ([]string, error) {
	switch scoring {
	case ScoringDefault:
		return nil, nil
	case ScoringMostAllocated:
	default:
		return nil, fmt.Errorf("scheduler scoring %q: want %q or %q", scoring, ScoringDefault, ScoringMostAllocated)
	}
	path := filepath.Join(clusterDir, SchedulerBinary+".config.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(mostAllocatedConfig, kubeconfig)), 0o644); err != nil {
		return nil, err
	}
	return []string{"--config=" + path}, nil
}

// mostAllocatedConfig is the bin-packing profile; %q is the kubeconfig's path.
const mostAllocatedConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
        - {name: nvidia.com/gpu, weight: 5}
`
