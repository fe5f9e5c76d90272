package explain

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Explanation is why one workload is placed where it is, on one view of the fleet. Its JSON field names are
// stable: tools read them (`fleetflow explain -o json`).
type Explanation struct {
	// Workload is "Kind/namespace/name"; ID is the store's key.
	Workload   string `json:"workload"`
	ID         string `json:"id"`
	Generation int64  `json:"generation"`
	// ViewIndex is the stream sequence of the view explained.
	ViewIndex uint64   `json:"viewIndex"`
	Analysis  Analysis `json:"analysis"`
	// Policy governs the workload, "" when none selects it.
	Policy   string        `json:"policy,omitempty"`
	Policies []PolicyMatch `json:"policies"`
	// Mode is how the policy places it: Single, Duplicate, Divide or Group.
	Mode          string `json:"mode,omitempty"`
	CapacityAware bool   `json:"capacityAware,omitempty"`
	Scoring       string `json:"scoring,omitempty"`
	// Dominant is the resource scores compare, "" when nothing is scored.
	Dominant string    `json:"dominant,omitempty"`
	Clusters []Cluster `json:"clusters"`
	// Decision is what the scheduler decides for the workload on this view.
	Decision Decision `json:"decision"`
	// Placement is what the store records, nil when the workload is placed nowhere.
	Placement *Placement `json:"placement,omitempty"`
	// Kept lists the clusters its copies still run on while it is placed nowhere.
	Kept []string `json:"kept,omitempty"`
}

// Analysis is what the ResourceInterface read from the workload.
type Analysis struct {
	ResourceInterface string      `json:"resourceInterface"`
	APIVersion        string      `json:"apiVersion"`
	Kind              string      `json:"kind"`
	TotalPods         int64       `json:"totalPods"`
	Components        []Component `json:"components"`
	// Gangs are the RI's gang groups; the scheduler fits every pod of the workload at once in any case.
	Gangs []Gang `json:"gangs,omitempty"`
}

// Component is one component instance: its pods and what each asks for.
type Component struct {
	Name string `json:"name"`
	Pods int64  `json:"pods"`
	// MinReplicas is the least the component runs with, when the RI reads one.
	MinReplicas    *int64    `json:"minReplicas,omitempty"`
	RequestsPerPod Resources `json:"requestsPerPod"`
}

// Gang is a set of components whose pods start together.
type Gang struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
}

// Resources maps resource names to quantities ("cpu": "4", "memory": "16Gi").
type Resources map[string]string

// String is "cpu 4, memory 16Gi", by resource name.
func (r Resources) String() string {
	parts := make([]string, 0, len(r))
	for _, name := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, name+" "+r[name])
	}
	return strings.Join(parts, ", ")
}

// PolicyMatch is one policy and whether it governs the workload.
type PolicyMatch struct {
	Name     string `json:"name"`
	Priority int32  `json:"priority"`
	// Result is GOVERNS, OUTRANKED (it selects the workload but another policy wins) or NOMATCH.
	Result string `json:"result"`
	Reason string `json:"reason"`
}

// Policy results.
const (
	PolicyGoverns   = "GOVERNS"
	PolicyOutranked = "OUTRANKED"
	PolicyNoMatch   = "NOMATCH"
)

// Cluster is every check of one cluster, in the order the scheduler applies them.
type Cluster struct {
	Name string `json:"name"`
	// Result is PASS when the cluster may take the workload, else FAIL with the scheduler's code and reason.
	Result string  `json:"result"`
	Code   string  `json:"code,omitempty"`
	Reason string  `json:"reason,omitempty"`
	Checks []Check `json:"checks"`
	Tier   int     `json:"tier"`
	// Score ranks the passing clusters of a capacity-aware single-cluster policy (lower first); Rank is the
	// cluster's place among the passing ones, from 1, 0 when it does not pass.
	Score    *int64 `json:"score,omitempty"`
	Rank     int    `json:"rank,omitempty"`
	Selected bool   `json:"selected,omitempty"`
	// Note says why a cluster passes that would fail for another workload (it runs there already, a held copy).
	Note string `json:"note,omitempty"`
	// LargestFreeNode is, when node fit fails, the node allowed to run the pod that came closest, and PodNeeds
	// what one pod of PodComponent asks for: the node shape that was too small.
	LargestFreeNode *NodeShape `json:"largestFreeNode,omitempty"`
	PodComponent    string     `json:"podComponent,omitempty"`
	PodNeeds        Resources  `json:"podNeeds,omitempty"`
}

// Check is the result of one check.
type Check struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// NodeShape is a node and what it has free of the resources a pod asks for.
type NodeShape struct {
	Node string    `json:"node"`
	Free Resources `json:"free"`
}

// Decision is the scheduler's decision for the workload on the view.
type Decision struct {
	Status   string           `json:"status"`
	Clusters []string         `json:"clusters,omitempty"`
	Replicas map[string]int64 `json:"replicas,omitempty"`
	Message  string           `json:"message,omitempty"`
}

// Placement is where the store records the workload as placed, and when that was decided.
type Placement struct {
	Clusters   []string         `json:"clusters"`
	Replicas   map[string]int64 `json:"replicas,omitempty"`
	Policy     string           `json:"policy"`
	DecisionID string           `json:"decisionId"`
	Generation int64            `json:"generation"`
	// DecidedIndex is the stream sequence of the decision, DecidedAt its time (RFC 3339, UTC), "" when unknown.
	DecidedIndex uint64 `json:"decidedIndex"`
	DecidedAt    string `json:"decidedAt,omitempty"`
}

// Explain explains the workload the store keys as id (structs.WorkloadID) on the view snap.
func Explain(snap *state.Snapshot, id string) (*Explanation, error) {
	wl := snap.Workload(id)
	if wl == nil {
		return nil, fmt.Errorf("explain: workload %s is not in the fleet view at sequence %d", id, snap.Index())
	}
	trace, err := scheduler.TraceClusters(snap, id)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	// A discarding logger: Schedule logs decisions at debug level, and explaining is not deciding.
	plan, err := scheduler.New(slog.New(slog.DiscardHandler)).Schedule(snap, id)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	rt := snap.Resources()
	e := &Explanation{Workload: wl.DisplayName(), ID: wl.ID, Generation: wl.Generation, ViewIndex: snap.Index(),
		Analysis: analysisOf(wl, rt), Policy: trace.Policy, Policies: policyMatches(snap, wl),
		Clusters: clustersOf(trace, rt), Decision: decisionOf(plan.Decisions[0]), Kept: wl.Kept}
	if trace.Policy != "" {
		e.Mode, e.CapacityAware, e.Scoring = string(trace.Mode), trace.CapacityAware, string(trace.Scoring)
	}
	if trace.Dominant >= 0 {
		e.Dominant = string(rt.Name(trace.Dominant))
	}
	if p := wl.Placement; p != nil {
		e.Placement = &Placement{Clusters: p.Clusters, Replicas: p.Replicas, Policy: p.Policy, DecisionID: p.DecisionID,
			Generation: p.Generation, DecidedIndex: p.DecidedIndex}
		if p.DecidedAt != 0 {
			e.Placement.DecidedAt = time.Unix(0, p.DecidedAt).UTC().Format(time.RFC3339Nano)
		}
	}
	return e, nil
}

// ResolveID returns the store key of the workload ref names: a store key itself, or "Kind/namespace/name" as
// people write it (the kind matched without regard to case). It fails when no workload, or more than one (the
// same kind in two API groups), has that name.
func ResolveID(snap *state.Snapshot, ref string) (string, error) {
	if snap.Workload(ref) != nil {
		return ref, nil
	}
	kind, rest, ok := strings.Cut(ref, "/")
	namespace, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || strings.Contains(name, "/") {
		return "", fmt.Errorf("explain: workload %q: want KIND/NAMESPACE/NAME", ref)
	}
	var ids []string
	for _, wl := range snap.Workloads() {
		if strings.EqualFold(wl.Kind, kind) && wl.Namespace == namespace && wl.Name == name {
			ids = append(ids, wl.ID)
		}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("explain: workload %s is not in the fleet view at sequence %d", ref, snap.Index())
	case 1:
		return ids[0], nil
	default:
		return "", fmt.Errorf("explain: workload %s is ambiguous: %s", ref, strings.Join(ids, ", "))
	}
}

func analysisOf(wl *structs.Workload, rt *structs.ResourceTable) Analysis {
	a := Analysis{APIVersion: wl.APIVersion, Kind: wl.Kind}
	if wl.Analysis != nil {
		a.ResourceInterface, a.TotalPods = wl.Analysis.ResourceInterface, wl.Analysis.TotalPods
		for _, g := range wl.Analysis.GangGroups {
			gang := Gang{Name: g.Name}
			for _, m := range g.Members {
				gang.Members = append(gang.Members, m.ComponentName)
			}
			a.Gangs = append(a.Gangs, gang)
		}
	}
	for i, pg := range wl.PodGroups {
		c := Component{Name: pg.Component, Pods: pg.Count, RequestsPerPod: resourcesOf(rt, pg.Request, nil)}
		if wl.Analysis != nil && i < len(wl.Analysis.Components) {
			c.MinReplicas = wl.Analysis.Components[i].MinReplicas
		}
		a.Components = append(a.Components, c)
	}
	return a
}

// resourcesOf renders the non-zero entries of v but the pod slot; with only set, it renders the entries only
// asks for instead, zero included, so a node shape shows the 0 GPUs it lacks.
func resourcesOf(rt *structs.ResourceTable, v, only structs.Vector) Resources {
	out := Resources{}
	for i := range rt.Len() {
		if i == structs.ResourcePods {
			continue
		}
		if (only == nil && v.Get(i) != 0) || (only != nil && only.Get(i) != 0) {
			out[string(rt.Name(i))] = rt.Quantity(i, v.Get(i))
		}
	}
	return out
}

// policyMatches says, for every policy by name, whether it governs the workload, and why not. The governing
// one is scheduler.PolicyFor's, the rule the scheduler applies.
func policyMatches(snap *state.Snapshot, wl *structs.Workload) []PolicyMatch {
	var nsLabels map[string]string
	if ns := snap.Namespace(wl.Namespace); ns != nil {
		nsLabels = ns.Labels
	}
	governs := scheduler.PolicyFor(snap, wl)
	var out []PolicyMatch
	for _, p := range snap.Policies() {
		m := PolicyMatch{Name: p.Name, Priority: p.Priority}
		match := p.MatchWorkload(wl.Group, wl.Kind, wl.Labels, nsLabels)
		switch {
		case governs != nil && p.Name == governs.Name:
			m.Result, m.Reason = PolicyGoverns, "selects the workload and ranks first (highest priority, then name)"
		case match.Selects():
			m.Result, m.Reason = PolicyOutranked, outranked(p, governs)
		default:
			m.Result, m.Reason = PolicyNoMatch, noMatch(match, wl)
		}
		out = append(out, m)
	}
	return out
}

func outranked(p, governs *policy.Policy) string {
	if p.Priority < governs.Priority {
		return fmt.Sprintf("selects the workload, but its priority %d is below %s's %d", p.Priority, governs.Name, governs.Priority)
	}
	return fmt.Sprintf("selects the workload, but has the priority of %s (%d), whose name sorts first", governs.Name, p.Priority)
}

func noMatch(m policy.WorkloadMatch, wl *structs.Workload) string {
	var why []string
	if !m.Namespace {
		why = append(why, "its namespaceSelector does not select namespace "+wl.Namespace)
	}
	if !m.Kind {
		why = append(why, "its resourceSelectors.kinds do not list "+wl.Group+"/"+wl.Kind)
	}
	if !m.Labels {
		why = append(why, "none of its resourceSelectors.labelSelectors selects the workload's labels")
	}
	return strings.Join(why, "; ")
}

func clustersOf(trace *scheduler.Trace, rt *structs.ResourceTable) []Cluster {
	out := make([]Cluster, 0, len(trace.Clusters))
	for _, ct := range trace.Clusters {
		c := Cluster{Name: ct.Cluster, Result: string(scheduler.OutcomeFail), Code: string(ct.Code), Reason: ct.Reason,
			Tier: max(ct.Tier, 0), Selected: slices.Contains(trace.Selected, ct.Cluster)}
		if ct.Passed {
			c.Result = string(scheduler.OutcomePass)
			c.Rank = slices.Index(trace.Ranking, ct.Cluster) + 1
		}
		if ct.Scored {
			c.Score = &ct.Score
		}
		switch {
		case ct.RunsAsIs:
			c.Note = "this version runs there already"
		case ct.Held:
			c.Note = "not Ready, but its Duplicate copy there is kept: it has nowhere else to go"
		}
		for _, ch := range ct.Checks {
			c.Checks = append(c.Checks, Check{Name: string(ch.Check), Result: string(ch.Outcome), Code: string(ch.Code),
				Detail: ch.Detail})
		}
		if ct.Pod != nil {
			c.PodComponent, c.PodNeeds = ct.Pod.Component, resourcesOf(rt, ct.Pod.Request, nil)
			if ct.Closest != nil {
				c.LargestFreeNode = &NodeShape{Node: ct.Closest.Node, Free: resourcesOf(rt, ct.Closest.Free, ct.Pod.Request)}
			}
		}
		out = append(out, c)
	}
	return out
}

func decisionOf(d *structs.Decision) Decision {
	return Decision{Status: string(d.Status), Clusters: d.Clusters, Replicas: d.Replicas, Message: d.Message}
}

// rankText is "rank 2 of 3".
func rankText(rank, of int) string { return "rank " + strconv.Itoa(rank) + " of " + strconv.Itoa(of) }

func sortedKeys(m map[string]int64) []string { return slices.Sorted(maps.Keys(m)) }
