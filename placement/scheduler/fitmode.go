package scheduler

import (
	"fmt"
	"strings"
)

// FitMode is how a cycle decides that a gang fits a cluster.
type FitMode string

const (
	// FitNodes packs every pod of the gang onto the cluster's nodes, honouring what kube-scheduler's filters
	// would (the default; "" means it too).
	FitNodes FitMode = "nodes"
	// FitSummed is a comparison mode, Karmada's general estimator's way: a cluster fits when its free
	// resources summed over its nodes cover the gang's summed requests. No node is looked at, so a cluster
	// whose free GPUs are scattered two per node "fits" an 8-GPU pod. The decision reserves the packing's
	// nodes when the gang also packs, and nothing otherwise (reservations are per node).
	FitSummed FitMode = "summed"
)

// FitModes are the modes ParseFitMode accepts, the default first.
var FitModes = []FitMode{FitNodes, FitSummed}

// ParseFitMode reads a mode by its name; "" is FitNodes.
func ParseFitMode(s string) (FitMode, error) {
	if s == "" {
		return FitNodes, nil
	}
	for _, m := range FitModes {
		if string(m) == s {
			return m, nil
		}
	}
	names := make([]string, len(FitModes))
	for i, m := range FitModes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("fit mode %q: want one of %s", s, strings.Join(names, ", "))
}

// WithFit is s deciding fit the given way; s itself is unchanged.
func (s *Scheduler) WithFit(mode FitMode) *Scheduler {
	if mode == "" {
		mode = FitNodes
	}
	return &Scheduler{logger: s.logger, fitMode: mode}
}

// summedFit is fit under FitSummed: the gang's total demand against the cluster's total free capacity (plus
// what the gang already holds there). It keeps the packing's assignments when the nodes take the gang too, so
// the store reserves them as under FitNodes.
func (c *cycle) summedFit(cand candidate, g *gang) ([]ownedAssignment, string) {
	if reason := c.totalCheck(cand.capacity, g); reason != "" {
		return nil, reason
	}
	if assignments, reason := c.packerFor(cand, g).pack(); reason == "" {
		return assignments, ""
	}
	return nil, ""
}
