package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetflow/fleetflow/schemas"
)

// Cluster is one workload cluster as the Fleet page shows it.
type Cluster struct {
	Name   string
	Labels map[string]string
	// Registered is set when the control plane's Cluster object is known.
	Registered bool
	Ready      bool
	// HeartbeatAge is how long ago the last heartbeat came; Heard is false when none did.
	HeartbeatAge time.Duration
	Heard        bool
	Nodes        int
	ReadyNodes   int
	GPUNodes     int
	Resources    []Resource
}

// Resource is one resource of a cluster: what its nodes can allocate and what their pods request.
type Resource struct {
	Name string
	// Allocatable and Requested are in the model's unit (millicores for cpu, else whole units).
	Allocatable, Requested int64
}

// Percent is the requested share of allocatable, 0 to 100 (more when overcommitted).
func (r Resource) Percent() float64 {
	if r.Allocatable <= 0 {
		return 0
	}
	return float64(r.Requested) * 100 / float64(r.Allocatable)
}

// Format writes an amount of the resource for people: cores, GiB, or a count.
func (r Resource) Format(v int64) string {
	switch r.Name {
	case "cpu":
		return strconv.FormatFloat(float64(v)/1000, 'f', -1, 64)
	case "memory":
		return strconv.FormatFloat(float64(v)/(1<<30), 'f', 1, 64) + "Gi"
	}
	return strconv.FormatInt(v, 10)
}

// Clusters lists every cluster, by name.
func (m *Model) Clusters() []Cluster {
	m.mu.RLock()
	defer m.mu.RUnlock()
	now := m.now()
	out := make([]Cluster, 0, len(m.clusters))
	for _, c := range m.clusters {
		v := Cluster{Name: c.name, Labels: maps.Clone(c.labels), Registered: c.registered, Heard: !c.heartbeat.IsZero(),
			Nodes: len(c.nodes), ReadyNodes: c.readyNodes, GPUNodes: len(c.gpuNodes)}
		if v.Heard {
			v.HeartbeatAge = max(now.Sub(c.heartbeat), 0)
			v.Ready = v.HeartbeatAge < m.heartbeatTimeout
		}
		for _, name := range slices.Sorted(maps.Keys(c.alloc)) {
			v.Resources = append(v.Resources, Resource{Name: name, Allocatable: c.alloc[name], Requested: c.req[name]})
		}
		slices.SortStableFunc(v.Resources, func(a, b Resource) int { return cmp.Compare(resourceRank(a.Name), resourceRank(b.Name)) })
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// resourceRank orders the bars: cpu, memory, then the GPU kinds by name.
func resourceRank(name string) int {
	switch name {
	case "cpu":
		return 0
	case "memory":
		return 1
	}
	return 2
}

// GPUNode is one GPU node of a heat map.
type GPUNode struct {
	Name       string
	GPUs, Free int64
}

// GPUNodes lists a cluster's GPU nodes by name, with their free GPUs; ok is false for an unknown cluster.
func (m *Model) GPUNodes(cluster string) (nodes []GPUNode, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := m.clusters[cluster]
	if c == nil {
		return nil, false
	}
	nodes = make([]GPUNode, len(c.gpuNodes))
	for i, name := range c.gpuNodes {
		n := c.nodes[name]
		nodes[i] = GPUNode{Name: name, GPUs: n.gpus, Free: n.gpusFree}
	}
	return nodes, true
}

// Workload is one row of the Workloads page.
type Workload struct {
	Key, Kind, Group, Namespace, Name string
	// Verdict is the latest verdict's status, "Pending" before the first.
	Verdict  string
	Clusters []string
	Phase    string
	Pods     int64
	GPUs     int64
	Age      time.Duration
	// HasAge is false when the creation time is unknown.
	HasAge bool
}

// VerdictPending stands for the verdict of a workload the placer has not answered yet.
const VerdictPending = "Pending"

func (m *Model) row(w *workload, now time.Time) Workload {
	r := Workload{Key: w.ref.Key(), Kind: w.ref.Kind, Group: w.ref.Group(), Namespace: w.ref.Namespace, Name: w.ref.Name,
		Verdict: VerdictPending}
	if v := w.verdict; v != nil {
		r.Verdict = string(v.Status)
		if v.Status == schemas.VerdictPlaced {
			r.Clusters = slices.Clone(v.Clusters)
		}
	}
	if a := w.analysis; a != nil {
		r.Pods = a.TotalPods
		for name, q := range a.TotalRequests {
			if IsGPU(string(name)) {
				r.GPUs += q.Value()
			}
		}
	}
	var phases []string
	for _, c := range slices.Sorted(maps.Keys(w.clusters)) {
		if o := w.clusters[c]; o.hasStatus && !o.gone && o.phase != "" && !slices.Contains(phases, o.phase) {
			phases = append(phases, o.phase)
		}
	}
	r.Phase = strings.Join(phases, ",")
	if !w.created.IsZero() {
		r.Age, r.HasAge = max(now.Sub(w.created), 0), true
	}
	return r
}

// Filter selects workloads: each set field must match its column. Text columns match a case-insensitive
// substring; Pods, GPUs and Age take a comparison (">=4", "<2", "=0", or a bare number for equality; Age
// takes durations: ">1h").
type Filter struct {
	Kind, Namespace, Name, Verdict, Cluster, Phase string
	Pods, GPUs, Age                                string
}

// compiled is a filter ready to test rows.
type compiled struct {
	pods, gpus   *comparison
	age          *comparison
	kind, ns, nm string
	verdict      string
	cluster      string
	phase        string
}

type comparison struct {
	op    string
	value int64
}

func (c *comparison) holds(v int64) bool {
	switch c.op {
	case ">":
		return v > c.value
	case ">=":
		return v >= c.value
	case "<":
		return v < c.value
	case "<=":
		return v <= c.value
	case "!=":
		return v != c.value
	}
	return v == c.value
}

// parseComparison reads "OP VALUE"; parse reads the value.
func parseComparison(column, s string, parse func(string) (int64, error)) (*comparison, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	c := &comparison{op: "="}
	for _, op := range []string{">=", "<=", "!=", ">", "<", "="} {
		if rest, ok := strings.CutPrefix(s, op); ok {
			c.op, s = op, strings.TrimSpace(rest)
			break
		}
	}
	v, err := parse(s)
	if err != nil {
		return nil, fmt.Errorf("filter %s: %q: want a comparison such as >=4, <1h or 2 (%w)", column, s, err)
	}
	c.value = v
	return c, nil
}

func (f Filter) compile() (*compiled, error) {
	c := &compiled{kind: strings.ToLower(f.Kind), ns: strings.ToLower(f.Namespace), nm: strings.ToLower(f.Name),
		verdict: strings.ToLower(f.Verdict), cluster: strings.ToLower(f.Cluster), phase: strings.ToLower(f.Phase)}
	count := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	var err error
	if c.pods, err = parseComparison("pods", f.Pods, count); err != nil {
		return nil, err
	}
	if c.gpus, err = parseComparison("gpus", f.GPUs, count); err != nil {
		return nil, err
	}
	c.age, err = parseComparison("age", f.Age, func(s string) (int64, error) {
		d, err := time.ParseDuration(s)
		return int64(d), err
	})
	return c, err
}

func contains(value, needle string) bool {
	return needle == "" || strings.Contains(strings.ToLower(value), needle)
}

func (c *compiled) matches(r *Workload) bool {
	if !contains(r.Kind, c.kind) || !contains(r.Namespace, c.ns) || !contains(r.Name, c.nm) ||
		!contains(r.Verdict, c.verdict) || !contains(r.Phase, c.phase) {
		return false
	}
	if c.cluster != "" && !slices.ContainsFunc(r.Clusters, func(s string) bool { return contains(s, c.cluster) }) {
		return false
	}
	if c.pods != nil && !c.pods.holds(r.Pods) {
		return false
	}
	if c.gpus != nil && !c.gpus.holds(r.GPUs) {
		return false
	}
	if c.age != nil && (!r.HasAge || !c.age.holds(int64(r.Age))) {
		return false
	}
	return true
}

// Page is one page of the workloads a filter selects.
type Page struct {
	Rows []Workload
	// Total counts every workload the filter selects; Number is the page's, from 1, of Pages.
	Total, Number, Pages, Size int
}

// Workloads returns page number (from 1) of size rows of the workloads f selects, by kind, namespace and
// name; a bad filter is an error naming its column.
func (m *Model) Workloads(f Filter, number, size int) (Page, error) {
	c, err := f.compile()
	if err != nil {
		return Page{}, err
	}
	m.mu.RLock()
	now := m.now()
	var rows []Workload
	for _, w := range m.workloads {
		if !w.known {
			continue
		}
		r := m.row(w, now)
		if c.matches(&r) {
			rows = append(rows, r)
		}
	}
	m.mu.RUnlock()
	slices.SortFunc(rows, func(a, b Workload) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace),
			strings.Compare(a.Name, b.Name), strings.Compare(a.Group, b.Group))
	})
	p := Page{Total: len(rows), Size: max(size, 1)}
	p.Pages = max((p.Total+p.Size-1)/p.Size, 1)
	p.Number = min(max(number, 1), p.Pages)
	from := (p.Number - 1) * p.Size
	p.Rows = rows[min(from, len(rows)):min(from+p.Size, len(rows))]
	return p, nil
}

// Detail is everything the model holds of one workload, for its page.
type Detail struct {
	Workload
	UID      string
	Verdict  *schemas.PlacementVerdict
	Analysis *schemas.Analysis
	// OnClusters is the workload's story per cluster it was decided for or reported from, by cluster.
	OnClusters []OnCluster
}

// OnCluster is a workload's latest decision, applier report and status on one cluster.
type OnCluster struct {
	Cluster     string
	Action      string
	Sequence    uint64
	Outcome     string
	Failed      bool
	Phase       string
	PendingPods int
	HasStatus   bool
	Gone        bool
}

// Workload returns the workload of key (schemas.ObjectRef.Key); ok is false for one the model does not
// know.
func (m *Model) Workload(key string) (Detail, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	w := m.workloads[key]
	if w == nil || !w.known {
		return Detail{}, false
	}
	d := Detail{Workload: m.row(w, m.now()), UID: w.ref.UID, Verdict: w.verdict, Analysis: w.analysis}
	for _, name := range slices.Sorted(maps.Keys(w.clusters)) {
		o := w.clusters[name]
		d.OnClusters = append(d.OnClusters, OnCluster{Cluster: name, Action: string(o.action), Sequence: o.sequence,
			Outcome: o.outcome, Failed: o.failed, Phase: o.phase, PendingPods: o.pendingPods, HasStatus: o.hasStatus, Gone: o.gone})
	}
	return d, true
}
