package localfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// StateFileName is the JSON file under the fleet directory that describes a running fleet.
const StateFileName = "fleet.json"

// State is the on-disk description of a running fleet, for fleet down and for tools that attach to a fleet
// started by another process.
type State struct {
	Dir       string         `json:"dir"`
	StartedAt time.Time      `json:"startedAt"`
	Etcd      EtcdState      `json:"etcd"`
	Clusters  []ClusterState `json:"clusters"`
}

// EtcdState describes the fleet's etcd.
type EtcdState struct {
	URL     string `json:"url"`
	PID     int    `json:"pid"`
	LogPath string `json:"logPath"`
}

// ClusterState describes one apiserver.
type ClusterState struct {
	Name string `json:"name"`
	// Role is "control-plane" or "workload".
	Role       string `json:"role"`
	Server     string `json:"server"`
	Port       int    `json:"port"`
	Kubeconfig string `json:"kubeconfig"`
	EtcdPrefix string `json:"etcdPrefix"`
	PID        int    `json:"pid"`
	LogPath    string `json:"logPath"`
	// Components run beside a workload cluster's apiserver when the fleet runs pods (Options.RunPods).
	Components []ComponentState `json:"components,omitempty"`
}

// ComponentState describes one process beside an apiserver: kube-scheduler, kube-controller-manager or kwok.
type ComponentState struct {
	Name    string `json:"name"`
	PID     int    `json:"pid"`
	Port    int    `json:"port"`
	LogPath string `json:"logPath"`
	// Operator is set for a framework operator (Fleet.StartOperators, fleet up --operators).
	Operator bool `json:"operator,omitempty"`
}

// Cluster roles in ClusterState.Role.
const (
	RoleControlPlane = "control-plane"
	RoleWorkload     = "workload"
)

// State returns the description of the fleet that Start wrote to the state file.
func (f *Fleet) State() State {
	state := State{
		Dir:       f.Dir,
		StartedAt: f.startedAt.UTC().Truncate(time.Second),
		Etcd:      EtcdState{URL: f.EtcdURL, PID: f.etcd.pid, LogPath: f.etcd.logPath},
	}
	for _, c := range f.Clusters() {
		role := RoleWorkload
		if c == f.ControlPlane {
			role = RoleControlPlane
		}
		var components []ComponentState
		f.mu.Lock()
		for _, comp := range c.Components {
			components = append(components, ComponentState{
				Name: comp.Name, PID: comp.PID, Port: comp.Port, LogPath: comp.LogPath, Operator: comp.Operator,
			})
		}
		f.mu.Unlock()
		state.Clusters = append(state.Clusters, ClusterState{
			Components: components,
			Name:       c.Name,
			Role:       role,
			Server:     c.Server,
			Port:       c.Port,
			Kubeconfig: c.KubeconfigPath,
			EtcdPrefix: c.EtcdPrefix,
			PID:        c.PID,
			LogPath:    c.LogPath,
		})
	}
	return state
}

func writeState(f *Fleet) error {
	f.stateMu.Lock() // operators of several clusters start at once
	defer f.stateMu.Unlock()
	data, err := json.MarshalIndent(f.State(), "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(f.Dir, StateFileName)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("local fleet: write state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("local fleet: write state: %w", err)
	}
	return nil
}

// ReadState reads the state file of the fleet in dir.
func ReadState(dir string) (*State, error) {
	path := filepath.Join(dir, StateFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no local fleet in %s (%s is missing): %w", dir, StateFileName, err)
		}
		return nil, err
	}
	var state State
	if err := json.Unmarshal(data, &state); err != nil {
		return nil, fmt.Errorf("local fleet state %s: %w", path, err)
	}
	return &state, nil
}

// Down stops the fleet in dir, which another process may have started, using the pid files under dir:
// apiservers first, then etcd, each with SIGTERM and after grace SIGKILL. It reports the pids it stopped.
// A pid whose process no longer runs, or runs something that is not part of this fleet, is skipped.
func Down(ctx context.Context, dir string, grace time.Duration) ([]int, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	pidFiles, err := readPIDFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("fleet down %s: %w", dir, err)
	}
	etcdPIDFile := filepath.Join(dir, "etcd.pid")
	// "apiservers" includes the components beside them (Options.RunPods), which have their pid files in the
	// same cluster directories.
	var apiservers, etcd []string
	for path := range pidFiles {
		if path == etcdPIDFile {
			etcd = append(etcd, path)
		} else {
			apiservers = append(apiservers, path)
		}
	}
	sort.Strings(apiservers)
	var stopped []int
	var errs []error
	// Apiservers before etcd, so none of them spends its last seconds failing to reach storage.
	for _, group := range [][]string{apiservers, etcd} {
		for _, path := range group {
			pid := pidFiles[path]
			if ProcessAlive(pid) && processBelongsTo(pid, dir) {
				if err := stopPID(ctx, pid, grace); err != nil {
					errs = append(errs, err)
					continue
				}
				stopped = append(stopped, pid)
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	if err := os.Remove(filepath.Join(dir, StateFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return stopped, fmt.Errorf("fleet down %s: %w", dir, err)
	}
	return stopped, nil
}
