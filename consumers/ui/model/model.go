package model

import (
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/schemas"
)

// DefaultHeartbeatTimeout is how long a silent cluster is still shown Ready, as the placer's default.
const DefaultHeartbeatTimeout = 30 * time.Second

// recentLimit bounds the recent decisions, verdicts and applier reports kept for the live feed.
const recentLimit = 500

// Input is one stored message, decoded.
type Input struct {
	// ID is the CloudEvent's id: a message read from the state stream and again live is taken once in the feed.
	ID      string
	Type    string
	Subject string
	Payload schemas.Payload
	// Stored is when the stream stored the message, by the server's clock; zero when unknown.
	Stored time.Time
	// Live is set on messages read after the state stream: they reach the live feed's subscribers.
	Live bool
}

// Model is the read model. Its methods are safe for concurrent use.
type Model struct {
	mu               sync.RWMutex
	now              func() time.Time
	heartbeatTimeout time.Duration
	clusters         map[string]*cluster
	workloads        map[string]*workload
	// deletedUIDs are the workloads seen deleted: what the streams still hold of them is not taken again.
	deletedUIDs map[string]bool
	recent      []Entry
	recentIDs   map[string]bool
	subscribers map[chan Entry]struct{}
	synced      bool
}

// Options tune a model; zero values take the defaults.
type Options struct {
	// HeartbeatTimeout is how long a silent cluster is still Ready.
	HeartbeatTimeout time.Duration
	// Now is the clock heartbeat ages and workload ages are measured with.
	Now func() time.Time
}

// New returns an empty model.
func New(opts Options) *Model {
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Model{now: opts.Now, heartbeatTimeout: opts.HeartbeatTimeout, clusters: map[string]*cluster{},
		workloads: map[string]*workload{}, deletedUIDs: map[string]bool{}, recentIDs: map[string]bool{},
		subscribers: map[chan Entry]struct{}{}}
}

// cluster is what the streams say of one workload cluster.
type cluster struct {
	name       string
	labels     map[string]string
	registered bool
	heartbeat  time.Time
	apis       int
	nodes      map[string]*node
	// gpuNodes are the names of the nodes that offer GPUs, sorted.
	gpuNodes   []string
	readyNodes int
	// alloc and req are the nodes' shown resources summed (see amount for the unit).
	alloc, req map[string]int64
}

// node is one node, reduced to what the pages show.
type node struct {
	ready, unschedulable bool
	alloc, req           map[string]int64
	gpus, gpusFree       int64
}

// workload is what the streams say of one control-plane workload.
type workload struct {
	ref schemas.ObjectRef
	// known is set once the workload's own event came: what else the streams hold of it may come first.
	known    bool
	created  time.Time
	verdict  *schemas.PlacementVerdict
	analysis *schemas.Analysis
	clusters map[string]*onCluster
}

// onCluster is a workload's story on one cluster.
type onCluster struct {
	phase       string
	pendingPods int
	gone        bool
	hasStatus   bool
	action      schemas.DecisionAction
	sequence    uint64
	outcome     string
	failed      bool
}

// IsGPU reports whether a resource is a GPU kind: the same rule the what-if's capacity table uses.
func IsGPU(name string) bool { return strings.Contains(strings.ToLower(name), "gpu") }

// shown reports whether a resource gets a bar: cpu, memory and every GPU kind.
func shown(name string) bool {
	return name == string(corev1.ResourceCPU) || name == string(corev1.ResourceMemory) || IsGPU(name)
}

// amount is a quantity as the model sums it: millicores for cpu, whole units otherwise (bytes of memory
// summed in millis would overflow past a few thousand large nodes).
func amount(name corev1.ResourceName, list corev1.ResourceList) int64 {
	q, ok := list[name]
	if !ok {
		return 0
	}
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func amounts(list corev1.ResourceList) map[string]int64 {
	out := make(map[string]int64, len(list))
	for name := range list {
		if shown(string(name)) {
			out[string(name)] = amount(name, list)
		}
	}
	return out
}

func (m *Model) cluster(name string) *cluster {
	c := m.clusters[name]
	if c == nil {
		c = &cluster{name: name, nodes: map[string]*node{}, alloc: map[string]int64{}, req: map[string]int64{}}
		m.clusters[name] = c
	}
	return c
}

func (m *Model) workload(ref schemas.ObjectRef) *workload {
	key := ref.Key()
	w := m.workloads[key]
	if w == nil {
		w = &workload{ref: ref, clusters: map[string]*onCluster{}}
		m.workloads[key] = w
	}
	return w
}

// sameWorkload reports whether ref is the incarnation of the workload w tracks (or w knows no uid yet).
func (w *workload) sameWorkload(ref schemas.ObjectRef) bool {
	return w.ref.UID == "" || ref.UID == "" || w.ref.UID == ref.UID
}

func (w *workload) on(cluster string) *onCluster {
	o := w.clusters[cluster]
	if o == nil {
		o = &onCluster{}
		w.clusters[cluster] = o
	}
	return o
}

// MarkSynced records that the state stream has been read: the model shows the fleet as it stands.
func (m *Model) MarkSynced() {
	m.mu.Lock()
	m.synced = true
	m.mu.Unlock()
}

// Synced reports whether the state stream has been read.
func (m *Model) Synced() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.synced
}

// Apply takes in one message.
func (m *Model) Apply(in Input) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch p := in.Payload.(type) {
	case *schemas.ClusterHeartbeat:
		m.heartbeat(p, in)
	case *schemas.ClusterAPIs:
		m.cluster(p.Cluster).apis = len(p.APIs)
	case *schemas.NodeState:
		m.setNode(p)
	case *schemas.NodeDeleted:
		if c := m.clusters[p.Cluster]; c != nil {
			c.removeNode(p.Name)
		}
	case *schemas.ObjectChanged:
		m.objectChanged(in.Type, p)
	case *schemas.ObjectDeleted:
		m.objectDeleted(in.Type, p)
	case *schemas.PlacementVerdict:
		m.takeVerdict(p)
		m.record(in, p.Workload, "", string(p.Status))
	case *schemas.WorkloadAnalyzed:
		if !m.deletedUIDs[p.Workload.UID] {
			a := p.Analysis
			m.workload(p.Workload).analysis = &a
		}
	case *schemas.PlacementDecided:
		if !m.deletedUIDs[p.Workload.UID] {
			w := m.workload(p.Workload)
			if w.sameWorkload(p.Workload) {
				o := w.on(p.Cluster)
				if p.Sequence >= o.sequence {
					o.action, o.sequence, o.outcome, o.failed = p.Action, p.Sequence, "", false
				}
			}
			if p.Verdict != nil {
				m.takeVerdict(p.Verdict)
			}
		}
		m.record(in, p.Workload, p.Cluster, string(p.Action))
	case *schemas.PlacementApplied:
		m.outcome(p.Workload, p.Cluster, p.Sequence, "applied", false)
		m.record(in, p.Workload, p.Cluster, "Applied")
	case *schemas.PlacementFailed:
		m.outcome(p.Workload, p.Cluster, p.Sequence, "failed: "+p.Error, true)
		m.record(in, p.Workload, p.Cluster, "Failed")
	case *schemas.WorkloadStatus:
		if m.deletedUIDs[p.Workload.UID] {
			return
		}
		w := m.workload(p.Workload)
		if !w.sameWorkload(p.Workload) {
			return
		}
		o := w.on(p.Cluster)
		o.hasStatus, o.gone, o.pendingPods, o.phase = true, p.Gone, p.PendingPods, Phase(p.Status)
	}
}

func (m *Model) heartbeat(p *schemas.ClusterHeartbeat, in Input) {
	// As the status writer takes it: when it was stored, by the server's clock; for a copy read from the state
	// stream (stored when copied, perhaps long after) the earlier of the two; never after now.
	at := p.Time
	if !in.Stored.IsZero() && (in.Live || at.IsZero() || in.Stored.Before(at)) {
		at = in.Stored
	}
	if now := m.now(); at.After(now) {
		at = now
	}
	if c := m.cluster(p.Cluster); at.After(c.heartbeat) {
		c.heartbeat = at
	}
}

func (m *Model) setNode(p *schemas.NodeState) {
	c := m.cluster(p.Cluster)
	c.removeNode(p.Name)
	n := &node{ready: p.Ready, unschedulable: p.Unschedulable, alloc: amounts(p.Allocatable), req: amounts(p.Requested)}
	for name, a := range n.alloc {
		c.alloc[name] += a
		if IsGPU(name) {
			n.gpus += a
			n.gpusFree += max(a-n.req[name], 0)
		}
	}
	for name, r := range n.req {
		c.req[name] += r
	}
	if n.ready {
		c.readyNodes++
	}
	c.nodes[p.Name] = n
	if n.gpus > 0 {
		i, _ := slices.BinarySearch(c.gpuNodes, p.Name)
		c.gpuNodes = slices.Insert(c.gpuNodes, i, p.Name)
	}
}

func (c *cluster) removeNode(name string) {
	n := c.nodes[name]
	if n == nil {
		return
	}
	for r, a := range n.alloc {
		c.alloc[r] -= a
	}
	for r, a := range n.req {
		c.req[r] -= a
	}
	if n.ready {
		c.readyNodes--
	}
	if n.gpus > 0 {
		if i, found := slices.BinarySearch(c.gpuNodes, name); found {
			c.gpuNodes = slices.Delete(c.gpuNodes, i, i+1)
		}
	}
	delete(c.nodes, name)
}

func (m *Model) objectChanged(eventType string, p *schemas.ObjectChanged) {
	ref := p.Ref()
	switch eventType {
	case schemas.TypeClusterChanged:
		c := m.cluster(ref.Name)
		c.registered = true
		meta, _ := p.Object["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		c.labels = map[string]string{}
		for k, v := range labels {
			if s, ok := v.(string); ok {
				c.labels[k] = s
			}
		}
	case schemas.TypeWorkloadChanged:
		if m.deletedUIDs[ref.UID] {
			return
		}
		w := m.workload(ref)
		if w.ref.UID != "" && w.ref.UID != ref.UID {
			// Deleted and created again under the same name: what was said of the old one no longer holds.
			*w = workload{clusters: map[string]*onCluster{}}
		}
		w.ref, w.known = ref, true
		meta, _ := p.Object["metadata"].(map[string]any)
		if s, ok := meta["creationTimestamp"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				w.created = t
			}
		}
		if v := w.verdict; v != nil && !w.sameWorkload(v.Workload) {
			w.verdict, w.analysis = nil, nil
		}
	}
}

func (m *Model) objectDeleted(eventType string, p *schemas.ObjectDeleted) {
	switch eventType {
	case schemas.TypeClusterDeleted:
		delete(m.clusters, p.Workload.Name)
	case schemas.TypeWorkloadDeleted:
		key := p.Workload.Key()
		if w := m.workloads[key]; w != nil && w.sameWorkload(p.Workload) {
			delete(m.workloads, key)
		}
		if p.Workload.UID != "" {
			m.deletedUIDs[p.Workload.UID] = true
		}
	}
}

// takeVerdict keeps the newest verdict of a workload: the highest sequence within one epoch, else the later.
func (m *Model) takeVerdict(v *schemas.PlacementVerdict) {
	if m.deletedUIDs[v.Workload.UID] {
		return
	}
	w := m.workload(v.Workload)
	if !w.sameWorkload(v.Workload) {
		return
	}
	if old := w.verdict; old != nil && old.Epoch == v.Epoch && old.Sequence > v.Sequence {
		return
	}
	w.verdict = v
	if v.Analysis != nil {
		w.analysis = v.Analysis
	}
}

func (m *Model) outcome(ref schemas.ObjectRef, cluster string, seq uint64, what string, failed bool) {
	if m.deletedUIDs[ref.UID] {
		return
	}
	w := m.workload(ref)
	if !w.sameWorkload(ref) {
		return
	}
	if o := w.on(cluster); seq >= o.sequence {
		o.sequence, o.outcome, o.failed = seq, what, failed
	}
}

// Entry is one decision, verdict or applier report of the live feed.
type Entry struct {
	ID       string    `json:"id"`
	Time     time.Time `json:"time"`
	What     string    `json:"what"`
	Workload string    `json:"workload"`
	Cluster  string    `json:"cluster,omitempty"`
	Summary  string    `json:"summary"`
}

// record adds a message to the recent entries, and hands a live one to the subscribers.
func (m *Model) record(in Input, ref schemas.ObjectRef, cluster, what string) {
	if in.ID != "" && m.recentIDs[in.ID] {
		return
	}
	e := Entry{ID: in.ID, Time: in.Stored, What: what, Workload: ref.Key(), Cluster: cluster,
		Summary: audit.AuditRecord{Payload: in.Payload}.Summary()}
	// Kept in stored order: the state stream's copies come in the order they were copied, not made.
	i := sort.Search(len(m.recent), func(i int) bool { return m.recent[i].Time.After(e.Time) })
	m.recent = slices.Insert(m.recent, i, e)
	m.recentIDs[e.ID] = true
	if len(m.recent) > recentLimit {
		delete(m.recentIDs, m.recent[0].ID)
		m.recent = slices.Delete(m.recent, 0, 1)
	}
	if !in.Live {
		return
	}
	for ch := range m.subscribers {
		select {
		case ch <- e:
		default: // a subscriber that does not keep up misses entries rather than holding the model up
		}
	}
}

// Subscribe returns a channel of the live entries from now on, and a function that ends the subscription.
func (m *Model) Subscribe() (<-chan Entry, func()) {
	ch := make(chan Entry, 256)
	m.mu.Lock()
	m.subscribers[ch] = struct{}{}
	m.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			m.mu.Lock()
			delete(m.subscribers, ch)
			m.mu.Unlock()
		})
	}
}

// Recent is the latest n entries, newest first.
func (m *Model) Recent(n int) []Entry {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n = min(n, len(m.recent))
	out := make([]Entry, 0, n)
	for i := len(m.recent) - 1; i >= len(m.recent)-n; i-- {
		out = append(out, m.recent[i])
	}
	return out
}

// Phase tells a workload's status in a word or two: its phase, else the types of its True conditions.
func Phase(status map[string]any) string {
	if len(status) == 0 {
		return ""
	}
	if phase, ok := status["phase"].(string); ok {
		return phase
	}
	conditions, _ := status["conditions"].([]any)
	var trueTypes []string
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["status"] == "True" {
			if t, ok := cond["type"].(string); ok {
				trueTypes = append(trueTypes, t)
			}
		}
	}
	return strings.Join(trueTypes, ",")
}
