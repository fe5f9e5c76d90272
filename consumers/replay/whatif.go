package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/schemas"
)

// WhatIf is a change of the policy set to replay the history under.
type WhatIf struct {
	// Policies are SchedulePolicy objects, each new or replacing the policy of its name.
	Policies []map[string]any
	// Delete names policies to drop.
	Delete []string
	// FromStart puts the changed set in force from the history's start ("had it been in force"); otherwise
	// it is applied after the history, as applying it now would be.
	FromStart bool
}

// Workload changes between the recorded outcome and the what-if one.
const (
	Same   = "Same"
	Moves  = "Moves"
	Loses  = "LosesPlacement"
	Gains  = "GainsPlacement"
	Other  = "Changes"
	policy = "SchedulePolicy"
)

// WorkloadChange is one workload's outcome, recorded and under the what-if.
type WorkloadChange struct {
	Workload string  `json:"workload"`
	Change   string  `json:"change"`
	Recorded Outcome `json:"recorded"`
	WhatIf   Outcome `json:"whatIf"`
}

// ClusterShare is the share of a cluster's allocatable resource that placed workloads request.
type ClusterShare struct {
	Cluster     string  `json:"cluster"`
	Resource    string  `json:"resource"`
	Allocatable string  `json:"allocatable"`
	Before      float64 `json:"before"`
	After       float64 `json:"after"`
}

// WhatIfReport is what a what-if replay found.
type WhatIfReport struct {
	// Workloads lists every live workload, changed ones first.
	Workloads []WorkloadChange `json:"workloads"`
	Summary   WhatIfSummary    `json:"summary"`
	Clusters  []ClusterShare   `json:"clusters"`
	// Replay is the replay of the history as recorded.
	Replay *Result `json:"replay"`
}

// WhatIfSummary counts the workloads by change.
type WhatIfSummary struct {
	Workloads       int `json:"workloads"`
	Move            int `json:"move"`
	LosePlacement   int `json:"losePlacement"`
	GainPlacement   int `json:"gainPlacement"`
	OtherwiseDiffer int `json:"otherwiseDiffer"`
}

// RunWhatIf replays the history that open returns under w, with opts.
func RunWhatIf(ctx context.Context, open func() (History, error), w WhatIf, opts Options) (*WhatIfReport, error) {
	names := map[string]bool{}
	for _, obj := range w.Policies {
		if err := checkPolicyObject(obj); err != nil {
			return nil, err
		}
		names[schemas.RefOf(obj).Name] = true
	}
	for _, name := range w.Delete {
		names[name] = true
	}
	base := NewSession(opts)
	h, err := open()
	if err != nil {
		return nil, err
	}
	res, err := base.Run(ctx, h)
	_ = h.Close()
	if err != nil {
		return nil, err
	}
	recorded := maps.Clone(base.RecordedOutcomes())
	for id, o := range base.Outcomes() {
		if _, ok := recorded[id]; !ok {
			recorded[id] = o
		}
	}
	before := requestedShares(base.Snapshot())
	known := map[string]bool{}
	for _, p := range base.Snapshot().Policies() {
		known[p.Name] = true
	}
	for _, name := range w.Delete {
		if !known[name] {
			return nil, fmt.Errorf("--delete-policy %s: no SchedulePolicy of that name is in force at the end of the history", name)
		}
	}

	s := base
	if w.FromStart {
		s = NewSession(opts)
		s.keep = func(r Record, p schemas.Payload) bool {
			return !names[policyNameOf(r.Event.Type(), p)]
		}
		for _, obj := range w.Policies {
			s.prelude = append(s.prelude, policyChanged(obj))
		}
		s.offset = uint64(len(s.prelude))
		h, err := open()
		if err != nil {
			return nil, err
		}
		_, err = s.Run(ctx, h)
		_ = h.Close()
		if err != nil {
			return nil, err
		}
	} else {
		for _, name := range w.Delete {
			ref := schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: policy, Name: name, UID: "whatif-" + name}
			if err := s.Inject(schemas.TypePolicyDeleted, schemas.PolicySubject(ref), &schemas.ObjectDeleted{Workload: ref}); err != nil {
				return nil, err
			}
		}
		for _, obj := range w.Policies {
			in := policyChanged(obj)
			if err := s.Inject(in.eventType, in.subject, in.payload); err != nil {
				return nil, err
			}
		}
	}
	for _, obj := range w.Policies {
		name := schemas.RefOf(obj).Name
		if err := s.Controller().PolicyRefused(name); err != nil {
			return nil, fmt.Errorf("SchedulePolicy %s: refused: %w", name, err)
		}
	}
	report := &WhatIfReport{Replay: res, Clusters: shareChanges(before, requestedShares(s.Snapshot()))}
	after := s.Outcomes()
	for _, id := range slices.Sorted(maps.Keys(after)) {
		c := WorkloadChange{Workload: id, Recorded: recorded[id], WhatIf: after[id]}
		c.Change = changeOf(c.Recorded, c.WhatIf)
		report.Workloads = append(report.Workloads, c)
		report.Summary.Workloads++
		switch c.Change {
		case Moves:
			report.Summary.Move++
		case Loses:
			report.Summary.LosePlacement++
		case Gains:
			report.Summary.GainPlacement++
		case Other:
			report.Summary.OtherwiseDiffer++
		}
	}
	slices.SortStableFunc(report.Workloads, func(a, b WorkloadChange) int {
		return cmpBool(a.Change == Same, b.Change == Same)
	})
	return report, nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// checkPolicyObject refuses what cannot be a SchedulePolicy, naming the field.
func checkPolicyObject(obj map[string]any) error {
	ref := schemas.RefOf(obj)
	switch {
	case ref.Kind != policy:
		return fmt.Errorf("kind: %q, want %s", ref.Kind, policy)
	case ref.APIVersion != "fleetflow.io/v1alpha1":
		return fmt.Errorf("SchedulePolicy %s: apiVersion: %q, want fleetflow.io/v1alpha1", ref.Name, ref.APIVersion)
	case ref.Name == "":
		return fmt.Errorf("SchedulePolicy: metadata.name: required")
	case ref.Namespace != "":
		return fmt.Errorf("SchedulePolicy %s: metadata.namespace: %q, but SchedulePolicies are cluster-scoped", ref.Name, ref.Namespace)
	}
	if _, ok := obj["spec"].(map[string]any); !ok {
		return fmt.Errorf("SchedulePolicy %s: spec: required", ref.Name)
	}
	return nil
}

// injection is an event fed that the history does not hold.
type injection struct {
	eventType, subject string
	payload            schemas.Payload
}

func policyChanged(obj map[string]any) injection {
	obj = maps.Clone(obj)
	meta := maps.Clone(objMap(obj["metadata"]))
	if meta["uid"] == nil {
		meta["uid"] = "whatif-" + schemas.RefOf(obj).Name
	}
	if meta["resourceVersion"] == nil {
		meta["resourceVersion"] = "whatif"
	}
	obj["metadata"] = meta
	payload := &schemas.ObjectChanged{Object: obj}
	return injection{eventType: schemas.TypePolicyChanged, subject: schemas.PolicySubject(payload.Ref()), payload: payload}
}

func objMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// policyNameOf is the name of the policy a policy event is about, "" for any other event.
func policyNameOf(eventType string, p schemas.Payload) string {
	switch eventType {
	case schemas.TypePolicyChanged:
		return p.(*schemas.ObjectChanged).Ref().Name
	case schemas.TypePolicyDeleted:
		return p.(*schemas.ObjectDeleted).Workload.Name
	}
	return ""
}

func changeOf(recorded, whatIf Outcome) string {
	placedBefore, placedAfter := recorded.Status == schemas.VerdictPlaced, whatIf.Status == schemas.VerdictPlaced
	switch {
	case placedBefore && placedAfter && slices.Equal(recorded.Clusters, whatIf.Clusters):
		return Same
	case placedBefore && placedAfter:
		return Moves
	case placedBefore:
		return Loses
	case placedAfter:
		return Gains
	case recorded.Status == whatIf.Status:
		return Same
	}
	return Other
}

// shareKey names a resource of a cluster.
type shareKey struct{ cluster, resource string }

type share struct {
	requested, allocatable int64
	// allocatableText is allocatable in the resource's usual form.
	allocatableText string
}

// requestedShares sums, per cluster, what the workloads placed there request of cpu, memory and every GPU
// resource, against what its nodes can allocate.
func requestedShares(snap *state.Snapshot) map[shareKey]share {
	table := snap.Resources()
	var shown []int
	for i := range table.Len() {
		name := table.Name(i)
		if name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.Contains(strings.ToLower(string(name)), "gpu") {
			shown = append(shown, i)
		}
	}
	out := map[shareKey]share{}
	for _, c := range snap.Capacities() {
		for _, i := range shown {
			out[shareKey{c.Name, string(table.Name(i))}] = share{allocatable: c.Allocatable.Get(i),
				allocatableText: table.Quantity(i, c.Allocatable.Get(i))}
		}
	}
	for _, wl := range snap.Workloads() {
		p := wl.Placement
		if p == nil {
			continue
		}
		var total int64
		for _, n := range p.Replicas {
			total += n
		}
		for _, c := range p.Clusters {
			for _, i := range shown {
				k := shareKey{c, string(table.Name(i))}
				sh := out[k]
				amount := wl.Demand.Get(i)
				if total > 0 {
					amount = amount * p.Replicas[c] / total
				}
				sh.requested += amount
				out[k] = sh
			}
		}
	}
	return out
}

func shareChanges(before, after map[shareKey]share) []ClusterShare {
	keys := slices.Collect(maps.Keys(before))
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b shareKey) int {
		if a.cluster != b.cluster {
			return strings.Compare(a.cluster, b.cluster)
		}
		return strings.Compare(a.resource, b.resource)
	})
	var out []ClusterShare
	for _, k := range keys {
		b, a := before[k], after[k]
		if a.allocatable == 0 && b.allocatable == 0 {
			continue
		}
		out = append(out, ClusterShare{Cluster: k.cluster, Resource: k.resource, Allocatable: a.allocatableText,
			Before: percent(b.requested, b.allocatable), After: percent(a.requested, a.allocatable)})
	}
	return out
}

func percent(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(int64(float64(part)*1000/float64(whole)+0.5)) / 10
}
