package structs

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/karta"
)

// WorkloadLabel is the pod label the appliers stamp with WorkloadLabelValue, so the pods a cluster reports can be
// matched back to the reservations that announced them.
const WorkloadLabel = "fleetflow.io/workload"

// Cluster is a workload cluster as the fleet view knows it.
type Cluster struct {
	Name   string
	Labels map[string]string
	Taints []corev1.Taint
	Ready  bool
	// NotReady says why a cluster is not Ready ("has sent no heartbeat since ..."), "" when it is or nobody said.
	NotReady string
	// Invalid says why the Cluster object is invalid (a taint an older CRD let in), "" when it is not. Such a
	// cluster takes no new workloads, and those on it stay, as under an untolerated NoSchedule taint: what the
	// misspelt taint was meant to do is unknown, and ignoring it placed what it was meant to keep off.
	Invalid string
	// APIs holds the installed kinds as "group/version/Kind"; nil means every kind is installed.
	APIs map[string]struct{}
	// ModifyIndex is the stream sequence of the last write.
	ModifyIndex uint64
}

// ServesAPI reports whether the cluster has a kind installed; key is APIKey(apiVersion, kind).
func (c *Cluster) ServesAPI(key string) bool {
	if c.APIs == nil {
		return true
	}
	_, ok := c.APIs[key]
	return ok
}

// APIKey is how Cluster.APIs names a kind: "group/version/Kind", "v1/Kind" for the core group.
func APIKey(apiVersion, kind string) string { return apiVersion + "/" + kind }

// Namespace is a control-plane namespace; policies select workloads by its labels.
type Namespace struct {
	Name        string
	Labels      map[string]string
	ModifyIndex uint64
}

// NodeInfo is a node as an observer reports it. The store turns it into a Node.
type NodeInfo struct {
	Cluster       string
	Name          string
	Labels        map[string]string
	Taints        []corev1.Taint
	Unschedulable bool
	Allocatable   corev1.ResourceList
	// Requested is the sum of the requests of the pods running on the node.
	Requested corev1.ResourceList
	// PodsByWorkload counts the node's pods per value of WorkloadLabel; it releases reservations.
	PodsByWorkload map[string]int64
	// RequestedByWorkload is what those pods request (pods included), per value of WorkloadLabel: a placed
	// workload repacked where it runs counts it as room, as it does its own reservations.
	RequestedByWorkload map[string]corev1.ResourceList
}

// Node is one node of a cluster, with its resources as vectors of the store's ResourceTable.
type Node struct {
	Cluster        string
	Name           string
	Labels         NodeLabels
	Taints         []corev1.Taint
	Unschedulable  bool
	Allocatable    Vector
	Requested      Vector
	PodsByWorkload map[string]int64
	// RequestedByWorkload is NodeInfo.RequestedByWorkload as vectors, nil when no placed workload runs here.
	RequestedByWorkload map[string]Vector
	ModifyIndex         uint64
}

// NodeLabels are a node's labels as keys and values in one sorted run: key, value, key, value. A fleet view
// holds a label set per node, and a map costs two to four allocations where this costs one, each marked by
// every garbage collection.
type NodeLabels []string

// NewNodeLabels returns labels as NodeLabels, sharing their strings; nil when there are none.
func NewNodeLabels(labels map[string]string) NodeLabels {
	if len(labels) == 0 {
		return nil
	}
	out := make(NodeLabels, 0, 2*len(labels))
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		out = append(out, k, labels[k])
	}
	return out
}

// Get returns the value of label key, and whether the node has it.
func (l NodeLabels) Get(key string) (string, bool) {
	lo, hi := 0, len(l)/2
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if l[2*mid] < key {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(l)/2 && l[2*lo] == key {
		return l[2*lo+1], true
	}
	return "", false
}

// Len is the number of labels.
func (l NodeLabels) Len() int { return len(l) / 2 }

// All yields the labels in key order.
func (l NodeLabels) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for i := 0; i+1 < len(l); i += 2 {
			if !yield(l[i], l[i+1]) {
				return
			}
		}
	}
}

// ID is the node's key in the store: "cluster/name".
func (n *Node) ID() string { return NodeID(n.Cluster, n.Name) }

// NodeID joins a cluster and node name into a node key.
func NodeID(cluster, node string) string { return cluster + "/" + node }

// WorkloadInfo is a workload as the pipeline reports it: its identity, labels and RI analysis.
type WorkloadInfo struct {
	Labels     map[string]string
	Generation int64
	Analysis   *karta.Analysis
	// Avoid maps clusters the workload must leave to why: its pods stayed Pending there, or it failed there
	// under a policy that reschedules on failure.
	Avoid map[string]string
}

// Workload is a workload in the fleet view with its demand converted to vectors.
type Workload struct {
	ID         string
	APIVersion string
	Group      string
	Kind       string
	Namespace  string
	Name       string
	Labels     map[string]string
	Generation int64
	Analysis   *karta.Analysis
	// PodGroups holds one entry per component instance, in analysis order.
	PodGroups []PodGroup
	// Demand is the sum over PodGroups of Count × Request.
	Demand Vector
	// Placement is where the workload was last placed, nil when it is not placed.
	Placement *Placement
	// Reservation is the capacity the placement still holds on nodes whose pods the clusters have not reported,
	// nil when none (neither placed nor Kept, every pod reported, or expired). A workload placed nowhere now keeps
	// the reservation of the copies it kept running. It is stored with the workload, which every
	// decision rewrites anyway, so a decision costs one write.
	Reservation *Reservation
	// Avoid maps clusters the workload is kept off to why (see WorkloadInfo.Avoid).
	Avoid map[string]string
	// Kept lists, while the workload is placed nowhere (an Unschedulable or NoPolicy decision replaced its
	// placement), the clusters it was last placed on: its copies keep running there, so what their pods take is
	// the workload's own room, and it stays on the one cluster it ran on once it fits there again rather than
	// moving (a job started again elsewhere). nil while it is placed, and for a workload never placed.
	Kept []string
	// ExclusiveUnits are sets of the workload's pods that each need a domain of their topology key to themselves
	// (karta.ExclusiveUnit), nil when there are none.
	ExclusiveUnits []ExclusiveUnit
	ModifyIndex    uint64
}

// ExclusiveUnit is a set of pods of a workload that run together in one domain of TopologyKey (the nodes sharing a
// value of the label) that no other of the workload's units with that key shares.
type ExclusiveUnit struct {
	TopologyKey string
	Pods        []UnitPods
	// Alone: the workload's pods outside its units may not run in the unit's domain either.
	Alone bool
	// AllNamespaces: the unit keeps out of the domains of the workloads of its kind in every namespace, not only
	// its own.
	AllNamespaces bool
}

// UnitPods is Count pods of the workload's pod group PodGroups[Group] in an exclusive unit.
type UnitPods struct {
	Group int
	Count int64
}

// RunsOn is the clusters the workload's copies run on: those it is placed on, or, placed nowhere now, those it
// was kept running on (Kept).
func (w *Workload) RunsOn() []string {
	if w.Placement != nil {
		return w.Placement.Clusters
	}
	return w.Kept
}

// DisplayName is "Kind/namespace/name", the name people read.
func (w *Workload) DisplayName() string { return w.Kind + "/" + w.Namespace + "/" + w.Name }

// PodGroup is Count identical pods of one component instance.
type PodGroup struct {
	// Component is the component name, with "/instance" when the component has instances.
	Component string
	Count     int64
	// Request is per pod, including the pod slot itself (ResourcePods = 1).
	Request              Vector
	NodeSelector         map[string]string
	RequiredNodeAffinity *corev1.NodeSelector
	Tolerations          []corev1.Toleration
	// NodeName is the template's spec.nodeName: its pods bypass the scheduler and run on that node only.
	NodeName string
	// NodeExclusive are what each pod holds on its node alone: host ports, as "<protocol>/<port>" (hostNetwork
	// makes every containerPort one; kube-scheduler's NodePorts), and "anti-affinity/<selector>" for a required
	// pod anti-affinity on the node's hostname that the pod's own labels match (InterPodAffinity). Two pods
	// holding the same entry cannot share a node.
	NodeExclusive []string
	// SpreadConstraints are the pod template's hard topology spread constraints (whenUnsatisfiable:
	// DoNotSchedule) whose selector matches the pods' own labels, so the pods count against themselves.
	SpreadConstraints []SpreadConstraint
	// AffinityKeys are the topology keys of the template's required pod affinities to pods its own labels
	// select (InterPodAffinity): all the pods run in one domain of each (one zone, one rack, one node).
	AffinityKeys []string
	// ConstraintKey identifies NodeSelector, RequiredNodeAffinity and Tolerations together ("" when all are
	// empty), so node eligibility can be memoized per chunk across cycles.
	ConstraintKey string
	// Scalable and ReplicasFieldPath come from the RI; Divide rewrites this path per cluster.
	Scalable          bool
	ReplicasFieldPath []string
	// PodTemplatePath is where the component's pod template is in the CR, nil when it is not there; a
	// policy's pinPods pins the pods of the groups that have one.
	PodTemplatePath []string
}

// SpreadConstraint is a hard topology spread constraint, as kube-scheduler's PodTopologySpread filter applies it:
// a pod may go to a domain (the nodes sharing a value of TopologyKey) only while that domain holds at most MaxSkew
// more of the pods than the domain holding the fewest. Domains are the nodes with the key that match the pods'
// node selector and required affinity (unless AffinityIgnored), whatever their taints (unless TaintsHonored); a
// domain the pods cannot use holds none of them, and so bounds every other one to MaxSkew. With fewer than
// MinDomains domains the fewest counts as 0.
type SpreadConstraint struct {
	TopologyKey     string
	MaxSkew         int64
	MinDomains      int64
	TaintsHonored   bool
	AffinityIgnored bool
}

// Placement is the clusters a workload runs on, and its replicas per cluster under Divide.
type Placement struct {
	DecisionID string
	Policy     string
	Generation int64
	Clusters   []string
	Replicas   map[string]int64
	// DecidedIndex is the stream sequence the decision was applied at, and DecidedAt the time it was applied
	// (Unix nanoseconds, the time the planner passed to ApplyPlan): what an operator asks when a workload
	// landed where it is. Later writes that keep the placement keep both.
	DecidedIndex uint64
	DecidedAt    int64
	// Pins are, per cluster, the nodes the decision packed each component's pods on, when its policy pins
	// pods (pinPods) and the workload is Pinnable; nil otherwise.
	Pins map[string][]Pin
}

// Pin is Pods pods of one component packed on one node.
type Pin struct {
	Component string
	Node      string
	Pods      int64
}

// PinsOf merges assignments into pins per cluster, sorted by component and node.
func PinsOf(assignments []Assignment) map[string][]Pin {
	if len(assignments) == 0 {
		return nil
	}
	pins := map[string][]Pin{}
	for _, a := range assignments {
		list := pins[a.Cluster]
		i := slices.IndexFunc(list, func(p Pin) bool { return p.Component == a.Component && p.Node == a.Node })
		if i < 0 {
			pins[a.Cluster] = append(list, Pin{Component: a.Component, Node: a.Node, Pods: a.Pods})
			continue
		}
		list[i].Pods += a.Pods
	}
	for _, list := range pins {
		slices.SortFunc(list, func(a, b Pin) int {
			return cmp.Or(strings.Compare(a.Component, b.Component), strings.Compare(a.Node, b.Node))
		})
	}
	return pins
}

// Pinnable reports whether some pod group's template can be written to, so its pods can be pinned.
func (w *Workload) Pinnable() bool {
	for _, g := range w.PodGroups {
		if len(g.PodTemplatePath) > 0 {
			return true
		}
	}
	return false
}

// WorkloadID builds the store key of a workload: "group/Kind/namespace/name" (group empty for the core group).
func WorkloadID(apiVersion, kind, namespace, name string) string {
	return APIGroup(apiVersion) + "/" + kind + "/" + namespace + "/" + name
}

// APIGroup returns the group of an apiVersion ("" for "v1").
func APIGroup(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return ""
	}
	return group
}

// WorkloadLabelValue is the value of WorkloadLabel for a workload ID: a hash, because IDs can exceed
// the 63 characters a label value may hold.
func WorkloadLabelValue(workloadID string) string {
	sum := sha256.Sum256([]byte(workloadID))
	return hex.EncodeToString(sum[:10])
}

// Reservation holds capacity for the pods one decision packed, node by node, until the cluster reports them (per
// node), the workload goes away or moves, or the reservation expires.
type Reservation struct {
	// ID is the decision ID.
	ID            string
	WorkloadID    string
	WorkloadLabel string
	// Nodes is sorted by cluster and node.
	Nodes []NodeReservation
	// ExpiresAt is in Unix nanoseconds.
	ExpiresAt   int64
	ModifyIndex uint64
}

// NodeReservation is what a reservation holds on one node.
type NodeReservation struct {
	Cluster string
	Node    string
	Pods    int64
	// Request is what all the reserved pods on the node ask for together, less what the workload's pods
	// already running there take (a grown workload kept where it runs).
	Request Vector
	// Packed, set only when running pods were taken off Request, is what the packed pods ask for in full, and
	// Credit what was taken off. The reservation holds until the workload's pods there are Pods many and request
	// Packed, or more than Credit of some resource (new pods run, smaller than packed): its old pods alone may
	// be as many.
	Packed Vector
	Credit Vector
}

// NodeIDs lists the reserved nodes' keys.
func (r *Reservation) NodeIDs() []string {
	ids := make([]string, len(r.Nodes))
	for i, n := range r.Nodes {
		ids[i] = NodeID(n.Cluster, n.Node)
	}
	return ids
}

// On returns what the reservation holds on a node, nil when nothing.
func (r *Reservation) On(cluster, node string) *NodeReservation {
	for i := range r.Nodes {
		if r.Nodes[i].Cluster == cluster && r.Nodes[i].Node == node {
			return &r.Nodes[i]
		}
	}
	return nil
}

// DecisionStatus is the outcome of a placement cycle.
type DecisionStatus string

// Decision statuses.
const (
	StatusPlaced        DecisionStatus = "Placed"
	StatusUnschedulable DecisionStatus = "Unschedulable"
	StatusNoPolicy      DecisionStatus = "NoPolicy"
	// StatusRemoved withdraws a workload that was deleted.
	StatusRemoved DecisionStatus = "Removed"
)

// Decision is the outcome of one placement cycle for one workload.
type Decision struct {
	// ID is stable: the same workload generation on the same snapshot yields the same ID, so replays dedupe.
	ID         string
	WorkloadID string
	Workload   string // DisplayName
	Generation int64
	// SnapshotIndex is the stream sequence of the fleet view the decision was computed on.
	SnapshotIndex uint64
	Policy        string
	Status        DecisionStatus
	Clusters      []string
	// Replicas is set under Divide: the replicas of the scalable component per cluster.
	Replicas map[string]int64
	// Assignments are the pods reserved per node.
	Assignments []Assignment
	// Reasons explains every rejected cluster.
	Reasons map[string]string
	// RejectCodes classifies each rejected cluster's reason, so a blocked workload is retried only on events
	// that could change the answer.
	RejectCodes map[string]RejectCode
	// Message explains the decision as a whole when no single cluster does (no policy, invalid workload).
	Message string
	// Widenable marks a placed Duplicate decision that some cluster rejected for capacity: like a blocked
	// workload, it is retried when capacity is freed there, and then spreads onto that cluster too.
	Widenable bool
	// Previous is the placement the workload had before; a decision whose Clusters differ from it is a move.
	Previous *Placement
	// Pin: the policy pins pods and the workload can be pinned, so the placement keeps its Assignments as Pins.
	Pin bool
}

// IsMove reports whether the decision takes a placed workload off at least one of its clusters.
func (d *Decision) IsMove() bool {
	if d.Previous == nil || len(d.Previous.Clusters) == 0 {
		return false
	}
	if d.Status != StatusPlaced || len(d.Previous.Clusters) != len(d.Clusters) {
		return true
	}
	for i, c := range d.Previous.Clusters {
		if d.Clusters[i] != c || d.Previous.Replicas[c] != d.Replicas[c] {
			return true
		}
	}
	return false
}

// RejectCode classifies why a cluster was rejected.
type RejectCode string

// Reject codes.
const (
	RejectSelector RejectCode = "Selector"
	RejectNotReady RejectCode = "NotReady"
	RejectTaint    RejectCode = "Taint"
	RejectAPI      RejectCode = "API"
	RejectCapacity RejectCode = "Capacity"
	RejectGroup    RejectCode = "Group"
	// RejectAvoided: the workload is moving off the cluster (its pods pended or failed there).
	RejectAvoided RejectCode = "Avoided"
)

// Assignment is Pods pods of one component packed onto one node.
type Assignment struct {
	Cluster   string
	Node      string
	Component string
	Pods      int64
	// PodRequest is per pod.
	PodRequest Vector
}

// DecisionID derives a stable decision ID from the workload, its generation and the snapshot index.
func DecisionID(workloadID string, generation int64, snapshotIndex uint64) string {
	// Hashes workloadID, NUL, generation, NUL, snapshot index in decimal, built on the stack.
	var buf [256]byte
	in := append(buf[:0], workloadID...)
	in = append(in, 0)
	in = strconv.AppendInt(in, generation, 10)
	in = append(in, 0)
	in = strconv.AppendUint(in, snapshotIndex, 10)
	sum := sha256.Sum256(in)
	return hex.EncodeToString(sum[:12])
}

// Plan is what one scheduler run submits: decisions for one or more workloads (several for a groupBy group).
type Plan struct {
	Decisions []*Decision
}

// ResourceInterface is a ResourceInterface known to the fleet view: which kind it reads and whether that kind is
// divisible. Engine is the compiled RI, for callers that analyze objects; the scheduler never reads it.
type ResourceInterface struct {
	Name        string
	Group       string
	Kind        string
	Divisible   bool
	Engine      *karta.Compiled
	ModifyIndex uint64
}

// GroupKind is "group/Kind".
func (ri *ResourceInterface) GroupKind() string { return ri.Group + "/" + ri.Kind }

// ClusterCapacity is the derived capacity view of one cluster: every node's free resources, in chunks, and the
// sums and maxima that let the scheduler prune a cluster, or a chunk of its nodes, without looking at each node.
// Chunks are copy-on-write: a write rebuilds only the chunks whose nodes changed, so updating one node costs a
// chunk, not the cluster.
type ClusterCapacity struct {
	Name string
	// Cluster is nil while nodes are known but the cluster is not.
	Cluster *Cluster
	// Chunks hold the nodes sorted by name, at most MaxChunkNodes each.
	Chunks    []*NodeChunk
	NodeCount int
	// Cordoned counts the nodes marked unschedulable, which Allocatable, Free and MaxFree leave out.
	Cordoned int
	// Allocatable and Free sum the schedulable nodes.
	Allocatable Vector
	Free        Vector
	// MaxFree is, per resource, the most any one schedulable node has free; MaxFreeNode names that node.
	MaxFree     Vector
	MaxFreeNode []string
	ModifyIndex uint64
}

// Chunk sizes: a chunk is split in two when it grows past MaxChunkNodes.
const (
	ChunkNodes    = 64
	MaxChunkNodes = 2 * ChunkNodes
)

// NodeChunk is a run of nodes with their sums and maxima over the schedulable ones.
type NodeChunk struct {
	Nodes []*NodeCapacity
	// The memos cache what readers derive from the chunk, which is immutable, so filling them does not change
	// what the chunk means. nodeMemo holds values that depend on the Node objects alone (which nodes pods with
	// some constraints may run on); a copy of the chunk over the same Node objects inherits them. freeMemo
	// holds values that also depend on the free capacity; a copy starts without them.
	memoMu   sync.Mutex
	nodeMemo map[string]any
	// nodeMemoShared: nodeMemo is also another chunk's (InheritNodeMemos), so it is copied before a write.
	nodeMemoShared bool
	freeMemo       map[string]any
	Allocatable    Vector
	Free           Vector
	MaxFree        Vector
	// MaxFreeNode is, per resource, the index in Nodes of the node with MaxFree, -1 when none.
	MaxFreeNode []int
	// Cordoned counts the nodes marked unschedulable.
	Cordoned int
}

// Eligible returns, per node of the chunk, whether a pod with the given constraint key may run there, computing
// it with allowed the first time a key is seen.
func (ch *NodeChunk) Eligible(key string, allowed func(*Node) bool) []bool {
	return ch.NodeMemo("eligible\x00"+key, func() any {
		mask := make([]bool, len(ch.Nodes))
		for j, nc := range ch.Nodes {
			mask[j] = allowed(nc.Node)
		}
		return mask
	}).([]bool)
}

// NodeMemo returns the value memoized under key, computing it the first time. compute must derive the value from
// the chunk's Node objects alone, never from Free or Reserved: InheritNodeMemos hands it to copies of the chunk
// whose capacity differs. The value is shared by every reader and must not be modified.
func (ch *NodeChunk) NodeMemo(key string, compute func() any) any {
	return ch.memo(&ch.nodeMemo, &ch.nodeMemoShared, MaxChunkMemos, key, compute)
}

// FreeMemo is NodeMemo for values that may also depend on the chunk's free capacity; copies never inherit them.
func (ch *NodeChunk) FreeMemo(key string, compute func() any) any {
	return ch.memo(&ch.freeMemo, nil, MaxChunkFreeMemos, key, compute)
}

// MaxChunkMemos and MaxChunkFreeMemos bound the entries of a chunk's node and free memos. Constraint keys come
// from workloads (node selectors, affinities, tolerations), so a fleet with per-job constraints would otherwise
// grow a chunk's memo without end, and each copy of the chunk for a reservation would copy all of it. A full
// memo starts over, so the keys in use now are memoized again and old ones age out. Free memos hold a few
// kilobytes each and live on every chunk nobody wrote to, hence the smaller bound.
const (
	MaxChunkMemos     = 64
	MaxChunkFreeMemos = 16
)

func (ch *NodeChunk) memo(memo *map[string]any, shared *bool, limit int, key string, compute func() any) any {
	ch.memoMu.Lock()
	if v, ok := (*memo)[key]; ok {
		ch.memoMu.Unlock()
		return v
	}
	// Computed without the lock: two readers may both compute a missing value, and either result is right.
	ch.memoMu.Unlock()
	v := compute()
	ch.memoMu.Lock()
	defer ch.memoMu.Unlock()
	if prev, ok := (*memo)[key]; ok {
		return prev
	}
	switch {
	case *memo == nil || len(*memo) >= limit:
		*memo = map[string]any{}
		if shared != nil {
			*shared = false
		}
	case shared != nil && *shared:
		*memo = maps.Clone(*memo)
		*shared = false
	}
	(*memo)[key] = v
	return v
}

// InheritNodeMemos gives ch the node memos of from when both hold the same Node objects in the same order, which
// is the case when a write changed only what is reserved on some of the nodes. ch must not be shared yet.
func (ch *NodeChunk) InheritNodeMemos(from *NodeChunk) {
	if len(ch.Nodes) != len(from.Nodes) {
		return
	}
	for j, nc := range ch.Nodes {
		if nc.Node != from.Nodes[j].Node {
			return
		}
	}
	from.memoMu.Lock()
	defer from.memoMu.Unlock()
	if len(from.nodeMemo) > 0 {
		// Both chunks read the one map; whichever adds to it first copies it.
		from.nodeMemoShared = true
		ch.nodeMemo, ch.nodeMemoShared = from.nodeMemo, true
	}
}

// threeVectors returns three zero vectors of n entries in one allocation; each is capped at n, so appending to
// one never writes into the next.
func threeVectors(n int) (Vector, Vector, Vector) {
	buf := make(Vector, 3*n)
	return buf[:n:n], buf[n : 2*n : 2*n], buf[2*n : 3*n : 3*n]
}

// Summarize recomputes the chunk's sums and maxima over its schedulable nodes for a table of n resources.
func (ch *NodeChunk) Summarize(n int) {
	ch.Allocatable, ch.Free, ch.MaxFree = threeVectors(n)
	ch.MaxFreeNode = make([]int, n)
	for i := range ch.MaxFreeNode {
		ch.MaxFreeNode[i] = -1
	}
	ch.Cordoned = 0
	for j, nc := range ch.Nodes {
		if nc.Node.Unschedulable {
			ch.Cordoned++
			continue
		}
		ch.Allocatable.AddInPlace(nc.Node.Allocatable, 1)
		for i, free := range nc.Free {
			ch.Free[i] += free
			if free > ch.MaxFree[i] || ch.MaxFreeNode[i] < 0 {
				ch.MaxFree[i] = free
				ch.MaxFreeNode[i] = j
			}
		}
	}
}

// Summarize recomputes the cluster's sums and maxima from its chunks.
func (c *ClusterCapacity) Summarize(n int) {
	c.Allocatable, c.Free, c.MaxFree = threeVectors(n)
	c.MaxFreeNode = make([]string, n)
	c.NodeCount, c.Cordoned = 0, 0
	for _, ch := range c.Chunks {
		c.NodeCount += len(ch.Nodes)
		c.Cordoned += ch.Cordoned
		c.Allocatable.AddInPlace(ch.Allocatable, 1)
		c.Free.AddInPlace(ch.Free, 1)
		for i, m := range ch.MaxFree {
			if ch.MaxFreeNode[i] >= 0 && (m > c.MaxFree[i] || c.MaxFreeNode[i] == "") {
				c.MaxFree[i] = m
				c.MaxFreeNode[i] = ch.Nodes[ch.MaxFreeNode[i]].Node.Name
			}
		}
	}
}

// Node returns a node by name, nil when the cluster has none of that name.
func (c *ClusterCapacity) Node(name string) *NodeCapacity {
	ci := c.ChunkFor(name)
	if ci >= len(c.Chunks) {
		return nil
	}
	ch := c.Chunks[ci]
	j, found := slices.BinarySearchFunc(ch.Nodes, name, compareNodeName)
	if !found {
		return nil
	}
	return ch.Nodes[j]
}

// ChunkFor returns the index of the chunk that holds, or would hold, a node name: the first chunk whose last node
// sorts at or after it, or the last chunk. It returns 0 when there are no chunks.
func (c *ClusterCapacity) ChunkFor(name string) int {
	i, _ := slices.BinarySearchFunc(c.Chunks, name, func(ch *NodeChunk, n string) int {
		return strings.Compare(ch.Nodes[len(ch.Nodes)-1].Node.Name, n)
	})
	return min(i, max(0, len(c.Chunks)-1))
}

// All yields every node in name order.
func (c *ClusterCapacity) All() iter.Seq[*NodeCapacity] {
	return func(yield func(*NodeCapacity) bool) {
		for _, ch := range c.Chunks {
			for _, nc := range ch.Nodes {
				if !yield(nc) {
					return
				}
			}
		}
	}
}

func compareNodeName(nc *NodeCapacity, name string) int { return strings.Compare(nc.Node.Name, name) }

// CompareNodeName orders NodeCapacity by node name, for binary searches.
func CompareNodeName(nc *NodeCapacity, name string) int { return compareNodeName(nc, name) }

// NodeCapacity is one node with what is reserved on it and what is left.
type NodeCapacity struct {
	Node     *Node
	Reserved Vector
	// Free is Allocatable − Requested − Reserved, never below 0.
	Free Vector
	// ReservedBy lists, sorted, the IDs of the workloads whose reservations hold capacity on the node (Reserved
	// is what they hold together).
	ReservedBy []string
}
