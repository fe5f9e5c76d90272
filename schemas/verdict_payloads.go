package schemas

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// VerdictStatus is the outcome of one placement cycle for a workload.
type VerdictStatus string

// Verdict statuses.
const (
	VerdictPlaced        VerdictStatus = "Placed"
	VerdictUnschedulable VerdictStatus = "Unschedulable"
	VerdictNoPolicy      VerdictStatus = "NoPolicy"
	// VerdictInvalid means the workload cannot be analyzed (no RI for its kind, or the RI fails on it).
	VerdictInvalid VerdictStatus = "Invalid"
)

// VerdictOutcome tells in a few words where a verdict puts its workload: its status, and the clusters it
// names, if any ("Placed on east,west", "Unschedulable").
func VerdictOutcome(status VerdictStatus, clusters []string) string {
	if len(clusters) == 0 {
		return string(status)
	}
	return string(status) + " on " + strings.Join(clusters, ",")
}

// PlacementVerdict is the placer's answer for a whole workload in one cycle: where it goes, or why it
// goes nowhere, with a reason for every rejected cluster. Per-cluster actions follow as PlacementDecided.
type PlacementVerdict struct {
	Workload ObjectRef `json:"workload"`
	// Sequence increases per workload from one verdict to the next, within one Epoch (as the sequence of
	// PlacementDecided), so a reader handed an older verdict after a newer one (a retried delivery, or
	// readers working in parallel) can tell and skip it.
	Sequence uint64 `json:"sequence"`
	// Epoch names the lifetime of the streams Sequence counts in; sequences of two epochs are not comparable.
	Epoch    string        `json:"epoch,omitempty"`
	Status   VerdictStatus `json:"status"`
	Policy   string        `json:"policy,omitempty"`
	Clusters []string      `json:"clusters,omitempty"`
	// Replicas is the per-cluster replica count of a Divide spread.
	Replicas map[string]int32 `json:"replicas,omitempty"`
	// Reasons maps each rejected cluster to why it was rejected.
	Reasons map[string]string `json:"reasons,omitempty"`
	// ReasonCodes maps each rejected cluster to a machine-readable reason: Selector, NotReady, Taint, API,
	// Capacity or Group.
	ReasonCodes map[string]string `json:"reasonCodes,omitempty"`
	Message     string            `json:"message,omitempty"`
	// ViewSequence is the stream sequence of the fleet view the verdict was computed on.
	ViewSequence uint64 `json:"viewSequence"`
	// Analysis is what the workload asked for, as its RI read it: the question the verdict answers. It
	// travels with the verdict rather than as an event of its own, which would cost the streams two more
	// stored messages (the event and its state copy) per workload.
	Analysis *Analysis `json:"analysis,omitempty"`
}

// Validate implements Payload.
func (p *PlacementVerdict) Validate() error {
	var errs []error
	errs = append(errs, p.Workload.validate("workload", true))
	if p.Sequence == 0 {
		errs = append(errs, errors.New("sequence: must be positive"))
	}
	if p.Analysis != nil {
		errs = append(errs, p.Analysis.validate("analysis.totalPods"))
	}
	switch p.Status {
	case VerdictPlaced:
		if len(p.Clusters) == 0 {
			errs = append(errs, errors.New("clusters: required when status is Placed"))
		}
	case VerdictUnschedulable, VerdictNoPolicy, VerdictInvalid:
	default:
		errs = append(errs, fmt.Errorf("status: %q is not one of Placed, Unschedulable, NoPolicy, Invalid", p.Status))
	}
	return errors.Join(errs...)
}

// Analysis is what the RI engine read out of a workload.
type Analysis struct {
	ResourceInterface string              `json:"resourceInterface,omitempty"`
	TotalPods         int64               `json:"totalPods"`
	TotalRequests     corev1.ResourceList `json:"totalRequests,omitempty"`
	Components        []AnalyzedComponent `json:"components,omitempty"`
	// Error says why the workload could not be analyzed.
	Error string `json:"error,omitempty"`
}

// WorkloadAnalyzed is an analysis as an event of its own. The placer now sends analyses inside verdicts
// (PlacementVerdict.Analysis); the type stays so history recorded before reads back.
type WorkloadAnalyzed struct {
	Workload ObjectRef `json:"workload"`
	Analysis
}

// AnalyzedComponent is one component instance of an analysis.
type AnalyzedComponent struct {
	Name        string              `json:"name"`
	Instance    string              `json:"instance,omitempty"`
	Pods        int64               `json:"pods"`
	PodRequests corev1.ResourceList `json:"podRequests,omitempty"`
}

// Validate implements Payload.
func (p *WorkloadAnalyzed) Validate() error {
	return errors.Join(p.Workload.validate("workload", true), p.validate("totalPods"))
}

func (a *Analysis) validate(field string) error {
	if a.TotalPods < 0 {
		return fmt.Errorf("%s: negative", field)
	}
	return nil
}
