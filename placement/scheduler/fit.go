package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// item is one pod group of a gang being packed, owned by one of the cycle's workloads (several under groupBy).
type item struct {
	owner int
	group *structs.PodGroup
	count int64
}

// ownedAssignment is an assignment with the index of the workload it belongs to.
type ownedAssignment struct {
	owner int
	structs.Assignment
}

// gang is what one cycle tries to fit on one cluster.
type gang struct {
	items  []item
	demand structs.Vector
	// own is capacity the gang's workloads already hold through reservations, per node name; it counts as free
	// for them so re-evaluating a placed workload does not trip over its own reservations.
	own map[string]structs.Vector
	// cordonTolerant: some pod group tolerates node.kubernetes.io/unschedulable, so cordoned nodes, which the
	// capacity summaries leave out, may take its pods and the summaries cannot bound it.
	cordonTolerant bool
	// units are the exclusive-topology units of the gang's workloads, packed before the items, whose counts
	// leave their pods out.
	units []gangUnit
}

// ownReservations collects what the given workloads hold, per cluster and node: their reservations, and what
// their pods running on the clusters they are placed on (or, placed nowhere now, still run on: Kept) request.
// Both count against a node's free capacity, and a workload packed again (a new version of it) takes their
// place: a grown CR whose old pods plus the new ones fit where it runs stays there, and one that was
// Unschedulable for a while fits again where its copy kept running. Only placed and kept workloads hold any, so
// fresh workloads cost no lookup.
func ownReservations(st State, workloads []*structs.Workload) map[string]map[string]structs.Vector {
	var own map[string]map[string]structs.Vector
	add := func(cluster, node string, v structs.Vector) {
		if own == nil {
			own = map[string]map[string]structs.Vector{}
		}
		if own[cluster] == nil {
			own[cluster] = map[string]structs.Vector{}
		}
		own[cluster][node] = own[cluster][node].Add(v)
	}
	var capacities []*structs.ClusterCapacity
	for _, wl := range workloads {
		runsOn := wl.RunsOn()
		// A workload placed nowhere now keeps the reservation of the copies it kept running (Kept).
		for _, r := range st.ReservationsOf(wl.ID) {
			for _, n := range r.Nodes {
				add(n.Cluster, n.Node, n.Request)
			}
		}
		if len(runsOn) == 0 {
			continue
		}
		label := structs.WorkloadLabelValue(wl.ID)
		for _, cluster := range runsOn {
			if capacities == nil {
				capacities = st.Capacities()
			}
			i, found := slices.BinarySearchFunc(capacities, cluster, func(cc *structs.ClusterCapacity, name string) int {
				return strings.Compare(cc.Name, name)
			})
			if !found {
				continue
			}
			for _, chunk := range capacities[i].Chunks {
				for _, nc := range chunk.Nodes {
					if v := nc.Node.RequestedByWorkload[label]; v != nil {
						add(cluster, nc.Node.Name, v)
					}
				}
			}
		}
	}
	return own
}

// boundCheck is the cheap cluster-level test: the gang's total demand against the cluster's total free, and each
// pod against the largest free amount any one node has. Both are necessary for a fit, so a cluster it rejects
// could never fit; it returns "" when the cluster survives.
func (c *cycle) boundCheck(cc *structs.ClusterCapacity, g *gang) string {
	if g.cordonTolerant {
		return ""
	}
	if reason := c.totalCheck(cc, g); reason != "" {
		return reason
	}
	rt := c.rt
	var ownTotal structs.Vector
	for _, v := range g.own {
		ownTotal = ownTotal.Add(v)
	}
	podFits := func(it item) string {
		for i, want := range it.group.Request {
			if want == 0 {
				continue
			}
			if largest := cc.MaxFree.Get(i) + ownTotal.Get(i); want > largest {
				name := string(rt.Name(i))
				if largest == 0 || cc.MaxFreeNode[i] == "" {
					return podOf(it.group.Component) + " (" + name + " " + rt.Quantity(i, want) +
						") fits no node: no node has " + name + " free" + cordonedNote(cc)
				}
				return podOf(it.group.Component) + " (" + name + " " + rt.Quantity(i, want) +
					") fits no node: largest free " + rt.Quantity(i, largest) + " on " + cc.MaxFreeNode[i] + cordonedNote(cc)
			}
		}
		return ""
	}
	for _, it := range g.items {
		if reason := podFits(it); reason != "" {
			return reason
		}
	}
	for _, u := range g.units {
		for _, it := range u.pods {
			if reason := podFits(it); reason != "" {
				return reason
			}
		}
	}
	return ""
}

// totalCheck is the first half of boundCheck: the gang's total demand against the cluster's total free, plus
// what the gang holds there already. It returns "" when the cluster has enough of every resource.
func (c *cycle) totalCheck(cc *structs.ClusterCapacity, g *gang) string {
	var ownTotal structs.Vector
	for _, v := range g.own {
		ownTotal = ownTotal.Add(v)
	}
	// Every resource the cluster lacks is named, as kube-scheduler names each insufficient one: a reason that
	// named only the first (memory, before the 16 GPUs a CPU-only cluster lacks) sent users after the lesser one.
	reason := ""
	for i, want := range g.demand {
		if want == 0 {
			continue
		}
		if free := cc.Free.Get(i) + ownTotal.Get(i); want > free {
			if cc.NodeCount == 0 {
				return "has no nodes"
			}
			if reason == "" {
				reason = c.totalReason(i, want, free)
			} else {
				reason += ", and " + strings.TrimPrefix(c.totalReason(i, want, free), "needs ")
			}
		}
	}
	if reason != "" {
		return reason + cordonedNote(cc)
	}
	return ""
}

// cordonedNote says, after a reason drawn from the cluster's sums, that cordoned nodes were left out of them, as
// kube-scheduler names the nodes it did not consider: a cluster drained for maintenance is not full.
func cordonedNote(cc *structs.ClusterCapacity) string {
	switch cc.Cordoned {
	case 0:
		return ""
	case 1:
		return " (1 node cordoned)"
	default:
		return " (" + strconv.Itoa(cc.Cordoned) + " nodes cordoned)"
	}
}

// totalReason says that a gang needs more of resource i in total than a cluster has free. A cycle that spills
// past full clusters writes it for each of them with the same few amounts, so it reuses the texts it wrote.
func (c *cycle) totalReason(i int, want, free int64) string {
	for _, r := range c.totalReasons {
		if r.resource == i && r.want == want && r.free == free {
			return r.text
		}
	}
	text := "needs " + string(c.rt.Name(i)) + " " + c.rt.Quantity(i, want) + " in total, " + c.rt.Quantity(i, free) + " free"
	if len(c.totalReasons) < maxTotalReasons {
		c.totalReasons = append(c.totalReasons, totalReason{resource: i, want: want, free: free, text: text})
	}
	return text
}

// maxTotalReasons bounds the texts a cycle keeps for reuse, so the lookup stays a short scan.
const maxTotalReasons = 16

type totalReason struct {
	resource   int
	want, free int64
	text       string
}

// packer packs one gang onto the nodes of one cluster.
type packer struct {
	rt *structs.ResourceTable
	c  *structs.ClusterCapacity
	g  *gang
	// ownTotal is the sum of g.own, added to chunk maxima so a chunk holding the gang's own reservations is
	// never skipped wrongly.
	ownTotal structs.Vector
	// chunks is, per chunk of c, what packing has taken from its nodes and whether it holds one of the gang's
	// own reservations. It stays nil until either happens, and a node of an untouched chunk has exactly its
	// snapshot free capacity, so the common case reads no adjustment at all.
	chunks []chunkState
	// nodeExclusive holds what the gang's pods placed so far hold on each node alone (PodGroup.NodeExclusive).
	nodeExclusive map[nodeKey][]string
	// held is, per exclusive unit's workload and key, the domains other workloads keep its units out of
	// (cycle.domainsHeld).
	held map[heldKey]map[string]bool
	// apart is, per pod group, the nodes of the domains its workload's units that are alone took: once the
	// units are packed, the workload's other pods keep out of them.
	apart map[*structs.PodGroup]map[nodeKey]bool
	// failed is the pod group whose pod fit no node, once diagnose explained it; TraceClusters names the node
	// that came closest.
	failed *structs.PodGroup
}

// chunkState is what a packer changed in one chunk.
type chunkState struct {
	// own: some node of the chunk may hold one of the gang's own reservations.
	own  bool
	used []usedNode
}

// usedNode is what packing has taken from one node so far.
type usedNode struct {
	node int
	v    structs.Vector
}

// nodeKey addresses a node by chunk and position.
type nodeKey struct{ chunk, node int }

// pack places every pod of the gang with first-fit-decreasing: pod groups in decreasing order of their dominant
// share of the cluster, each pod on the first node (by name) where it is allowed and fits. Pods of one group are
// identical and free capacity only shrinks while packing, so a group resumes from the node where its previous
// pod went, and skips whole chunks whose largest free amounts cannot hold the pod. It returns the assignments,
// or the reason the first pod that fit nowhere did not fit.
func (p *packer) pack() ([]ownedAssignment, string) {
	for name, v := range p.g.own {
		p.ownTotal = p.ownTotal.Add(v)
		if ci := p.c.ChunkFor(name); ci < len(p.c.Chunks) {
			p.state(ci).own = true
		}
	}
	var out []ownedAssignment
	if len(p.g.units) > 0 {
		assignments, reason := p.packUnits()
		if reason != "" {
			return nil, reason
		}
		out = assignments
	}
	items := p.g.items
	if len(items) > 1 {
		size := func(it item) float64 {
			var share float64
			for i, want := range it.group.Request {
				if i == structs.ResourcePods || want == 0 {
					continue
				}
				if alloc := p.c.Allocatable.Get(i); alloc > 0 {
					share = max(share, float64(want)/float64(alloc))
				}
			}
			return share
		}
		items = slices.Clone(items)
		slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(size(b), size(a)) })
	}

	for _, it := range items {
		key := memoKey(it.group)
		pos := nodeKey{}
		placed := int64(0)
		if len(it.group.SpreadConstraints) > 0 || len(it.group.AffinityKeys) > 0 {
			assignments, reason := p.packConstrained(it, key)
			if reason != "" {
				return nil, reason
			}
			out = append(out, assignments...)
			continue
		}
		for placed < it.count {
			var ok bool
			if pos, ok = p.next(pos, it.group, key); !ok {
				return nil, p.diagnose(it, placed, key)
			}
			// Put as many of the group's pods on this node as fit, in one assignment and one step, so a huge
			// replica count costs no more than a small one; next found the node allowed and with room for one.
			n := p.roomFor(pos, it.group, it.count-placed)
			p.place(pos, it.group, n)
			placed += n
			out = append(out, ownedAssignment{owner: it.owner, Assignment: structs.Assignment{
				Cluster: p.c.Name, Node: p.c.Chunks[pos.chunk].Nodes[pos.node].Node.Name, Component: it.group.Component,
				Pods: n, PodRequest: it.group.Request}})
		}
	}
	return out, ""
}

// next returns the first node at or after pos where a pod of g fits.
func (p *packer) next(pos nodeKey, g *structs.PodGroup, key string) (nodeKey, bool) {
	for ; pos.chunk < len(p.c.Chunks); pos = (nodeKey{chunk: pos.chunk + 1}) {
		ch := p.c.Chunks[pos.chunk]
		if !p.chunkMayFit(ch, g.Request) {
			continue
		}
		el := eligibilityOf(ch, g, key)
		if el.count == 0 {
			continue
		}
		// Packing only takes capacity away, so unless the chunk holds the gang's own reservations no node
		// of it has more free than in the snapshot, and the chunk's free frontier rules out a pod that no
		// allowed node fits without looking at each node.
		if (p.chunks == nil || !p.chunks[pos.chunk].own) && !freeOf(ch, el, key).mayFit(g.Request) {
			continue
		}
		for ; pos.node < len(ch.Nodes); pos.node++ {
			if el.mask[pos.node] && p.hasRoom(pos, g) {
				return pos, true
			}
		}
	}
	return pos, false
}

// chunkMayFit is false when some request exceeds the chunk's largest free amount (plus the gang's own
// reservations), so no node of the chunk can take the pod.
func (p *packer) chunkMayFit(ch *structs.NodeChunk, req structs.Vector) bool {
	if p.g.cordonTolerant {
		return true
	}
	for r, want := range req {
		if want > 0 && want > ch.MaxFree.Get(r)+p.ownTotal.Get(r) {
			return false
		}
	}
	return true
}

// state returns what packing changed in chunk ci, allocating the per-chunk states on first use.
func (p *packer) state(ci int) *chunkState {
	if p.chunks == nil {
		p.chunks = make([]chunkState, len(p.c.Chunks))
	}
	return &p.chunks[ci]
}

// touched reports whether a node of chunk ci may read other than its snapshot free capacity.
func (p *packer) touched(ci int) bool {
	return p.chunks != nil && (p.chunks[ci].own || len(p.chunks[ci].used) > 0)
}

// adjust returns what the gang's own reservations add to a node, and what packing has taken from it so far.
func (p *packer) adjust(k nodeKey, name string) (plus, minus structs.Vector) {
	if p.chunks == nil {
		return nil, nil
	}
	cs := &p.chunks[k.chunk]
	if cs.own {
		plus = p.g.own[name]
	}
	for i := range cs.used {
		if cs.used[i].node == k.node {
			return plus, cs.used[i].v
		}
	}
	return plus, nil
}

func (p *packer) hasRoom(k nodeKey, g *structs.PodGroup) bool {
	if p.apart != nil && p.apart[g][k] {
		return false
	}
	for _, port := range g.NodeExclusive {
		if slices.Contains(p.nodeExclusive[k], port) {
			return false
		}
	}
	nc := p.c.Chunks[k.chunk].Nodes[k.node]
	plus, minus := p.adjust(k, nc.Node.Name)
	if plus == nil && minus == nil {
		return g.Request.FitsIn(nc.Free)
	}
	for r, want := range g.Request {
		if want > 0 && want > nc.Free.Get(r)+plus.Get(r)-minus.Get(r) {
			return false
		}
	}
	return true
}

// roomFor returns how many more pods of g, up to limit, fit on a node where one does: the fewest that any
// requested resource leaves room for, and one when the pods hold something on their node alone (PodGroup.NodeExclusive).
func (p *packer) roomFor(k nodeKey, g *structs.PodGroup, limit int64) int64 {
	if len(g.NodeExclusive) > 0 {
		return 1
	}
	nc := p.c.Chunks[k.chunk].Nodes[k.node]
	plus, minus := p.adjust(k, nc.Node.Name)
	n := limit
	for r, want := range g.Request {
		if want > 0 {
			n = min(n, (nc.Free.Get(r)+plus.Get(r)-minus.Get(r))/want)
		}
	}
	return max(n, 1)
}

// place records n pods of g as placed on node k: what they request, and what they hold on the node alone
// (PodGroup.NodeExclusive).
func (p *packer) place(k nodeKey, g *structs.PodGroup, n int64) {
	p.take(k, g.Request, n)
	if len(g.NodeExclusive) > 0 {
		if p.nodeExclusive == nil {
			p.nodeExclusive = map[nodeKey][]string{}
		}
		p.nodeExclusive[k] = append(p.nodeExclusive[k], g.NodeExclusive...)
	}
}

// take records n pods of request req as placed on node k.
func (p *packer) take(k nodeKey, req structs.Vector, n int64) {
	cs := p.state(k.chunk)
	for i := range cs.used {
		if cs.used[i].node == k.node {
			cs.used[i].v.AddInPlace(req, n)
			return
		}
	}
	u := make(structs.Vector, max(p.rt.Len(), len(req)))
	u.AddInPlace(req, n)
	cs.used = append(cs.used, usedNode{node: k.node, v: u})
}

// eligibility is which nodes of a chunk pods with one set of constraints may run on, memoized on the chunk per
// constraint key. It depends on the Node objects alone, so a chunk copied for a reservation keeps it.
type eligibility struct {
	mask  []bool
	count int
	// rejected counts the nodes that are not allowed per reason, in the order the reasons first occur, so a
	// pod that fits no node says why the nodes it may not use were out (a missing GPU toleration, say).
	rejected []reasonCount
}

type reasonCount struct {
	why string
	n   int
}

// memoKey is the key under which the scheduler memoizes, on a chunk, what depends on a pod group's constraints:
// its eligibility (a node memo) and its chunkFree (a free memo). Constraint keys are long (serialized selectors
// and tolerations) and every chunk a cycle visits looks them up, so each is interned once as a short key.
func memoKey(g *structs.PodGroup) string {
	if g.ConstraintKey == "" {
		return "scheduler\x00"
	}
	memoKeys.Lock()
	defer memoKeys.Unlock()
	if k, ok := memoKeys.short[g.ConstraintKey]; ok {
		return k
	}
	if len(memoKeys.short) >= maxMemoKeys {
		// Past the bound the long form serves; it cannot collide with a short one.
		return "scheduler\x00" + g.ConstraintKey
	}
	if memoKeys.short == nil {
		memoKeys.short = map[string]string{}
	}
	k := "scheduler\x01" + strconv.Itoa(len(memoKeys.short))
	memoKeys.short[g.ConstraintKey] = k
	return k
}

// memoKeys maps constraint keys to their short memo keys, for the whole process: chunks are shared by every
// Scheduler reading a snapshot, so a key must mean the same constraints to all of them.
var memoKeys struct {
	sync.Mutex
	short map[string]string
}

// maxMemoKeys bounds the interned constraint keys.
const maxMemoKeys = 1 << 14

// eligibilityOf returns which nodes of ch allow pods of g; key is memoKey(g).
func eligibilityOf(ch *structs.NodeChunk, g *structs.PodGroup, key string) *eligibility {
	return ch.NodeMemo(key, func() any {
		el := &eligibility{mask: make([]bool, len(ch.Nodes))}
		for j, nc := range ch.Nodes {
			if isAllowed(nc.Node, g) {
				el.mask[j] = true
				el.count++
				continue
			}
			why := allowed(nc.Node, g)
			if i := slices.IndexFunc(el.rejected, func(rc reasonCount) bool { return rc.why == why }); i >= 0 {
				el.rejected[i].n++
			} else {
				el.rejected = append(el.rejected, reasonCount{why: why, n: 1})
			}
		}
		return el
	}).(*eligibility)
}

// chunkFree summarizes the free capacity of the nodes of a chunk that allow some pod group, memoized on the chunk
// per constraint key (it depends on free capacity, so a copied chunk computes it again).
type chunkFree struct {
	// largest is, per resource, the most any allowed node has free, and largestAt the first such node.
	largest   []int64
	largestAt []int
	// first is the first allowed node: the answer for resources past the end of largest, which no node has.
	first int
	// frontier holds the free vectors of allowed nodes that no other allowed node's free vector covers: a pod
	// fits some allowed node exactly when it fits one of them.
	frontier []structs.Vector
}

// largestOf returns the most any allowed node has free of resource r, and the first node with that much.
func (cf *chunkFree) largestOf(r int) (int64, int) {
	if r < len(cf.largest) {
		return cf.largest[r], cf.largestAt[r]
	}
	return 0, cf.first
}

// mayFit reports whether some allowed node of the chunk has req free.
func (cf *chunkFree) mayFit(req structs.Vector) bool {
	return slices.ContainsFunc(cf.frontier, req.FitsIn)
}

// covers reports whether a has at least as much as b of every resource.
func covers(a, b structs.Vector) bool {
	for r := range max(len(a), len(b)) {
		if a.Get(r) < b.Get(r) {
			return false
		}
	}
	return true
}

// freeOf computes chunkFree for a chunk with at least one node allowed by el; key is memoKey of the pod group.
func freeOf(ch *structs.NodeChunk, el *eligibility, key string) *chunkFree {
	return ch.FreeMemo(key, func() any {
		n := 0
		for _, nc := range ch.Nodes {
			n = max(n, len(nc.Free))
		}
		cf := &chunkFree{largest: make([]int64, n), largestAt: make([]int, n), first: -1}
		for r := range cf.largestAt {
			cf.largestAt[r] = -1
		}
		for j, nc := range ch.Nodes {
			if !el.mask[j] {
				continue
			}
			if cf.first < 0 {
				cf.first = j
			}
			for r := range n {
				if free := nc.Free.Get(r); cf.largestAt[r] < 0 || free > cf.largest[r] {
					cf.largest[r], cf.largestAt[r] = free, j
				}
			}
			if slices.ContainsFunc(cf.frontier, func(f structs.Vector) bool { return covers(f, nc.Free) }) {
				continue
			}
			cf.frontier = slices.DeleteFunc(cf.frontier, func(f structs.Vector) bool { return covers(nc.Free, f) })
			cf.frontier = append(cf.frontier, nc.Free)
		}
		return cf
	}).(*chunkFree)
}

// isAllowed reports whether a pod group may run on a node; allowed says why not.
// isAllowed reports whether pods of g may run on n. A pod bound by spec.nodeName skips kube-scheduler: the
// kubelet admits it on a cordoned node and despite NoSchedule taints, and refuses it only for its node
// selector, its node affinity and a NoExecute taint it does not tolerate.
func isAllowed(n *structs.Node, g *structs.PodGroup) bool {
	bound := g.NodeName != ""
	return (!bound || g.NodeName == n.Name) && (bound || !n.Unschedulable || toleratesCordon(g.Tolerations)) &&
		matchesNodeSelector(g.NodeSelector, n.Labels) && matchesNodeAffinity(g.RequiredNodeAffinity, n.Name, n.Labels) &&
		untoleratedTaintFor(n, g) == nil
}

// allowed returns why a pod group may not run on a node, "" when it may.
func allowed(n *structs.Node, g *structs.PodGroup) string {
	switch {
	case g.NodeName != "" && g.NodeName != n.Name:
		return "node name"
	case g.NodeName == "" && n.Unschedulable && !toleratesCordon(g.Tolerations):
		return "unschedulable"
	case !matchesNodeSelector(g.NodeSelector, n.Labels):
		return "node selector"
	case !matchesNodeAffinity(g.RequiredNodeAffinity, n.Name, n.Labels):
		return "node affinity"
	}
	if t := untoleratedTaintFor(n, g); t != nil {
		return "taint " + taintString(t.Key, t.Value, string(t.Effect))
	}
	return ""
}

// untoleratedTaintFor returns the first taint of n that keeps pods of g off it.
func untoleratedTaintFor(n *structs.Node, g *structs.PodGroup) *corev1.Taint {
	if g.NodeName != "" {
		return untoleratedTaintOf(n.Taints, g.Tolerations, corev1.TaintEffectNoExecute)
	}
	return untoleratedTaint(n.Taints, g.Tolerations)
}

func taintString(key, value, effect string) string {
	if value != "" {
		return key + "=" + value + ":" + effect
	}
	return key + ":" + effect
}

// diagnose explains why a pod of it fits no node, in the order a user can act on: no node allows the pod at all,
// one of its requests exceeds what any allowed node has free, or no allowed node has all of it free at once.
// podOf names a pod of a component in a reason: "pod worker", or "pod" alone for a component named pod (the
// one component of a Deployment or a Job), which would otherwise read "pod pod".
func podOf(component string) string {
	if component == "" || component == "pod" {
		return "pod"
	}
	return "pod " + component
}

// key is memoKey(it.group). It reads per-chunk summaries, memoized on the chunks, and looks at single
// nodes only in the chunks packing touched, so a cluster that does not fit costs a pass over its chunks, not its
// nodes.
func (p *packer) diagnose(it item, placed int64, key string) string {
	g := it.group
	p.failed = g
	who := podOf(g.Component)
	if placed > 0 {
		who = fmt.Sprintf("%s (%d of %d placed)", who, placed, it.count)
	}
	allowedNodes := 0
	largest := make(structs.Vector, len(g.Request))
	largestNode := make([]string, len(g.Request))
	for ci, ch := range p.c.Chunks {
		el := eligibilityOf(ch, g, key)
		if el.count == 0 {
			continue
		}
		allowedNodes += el.count
		if p.touched(ci) {
			for j, nc := range ch.Nodes {
				if !el.mask[j] {
					continue
				}
				plus, minus := p.adjust(nodeKey{ci, j}, nc.Node.Name)
				for r := range g.Request {
					free := nc.Free.Get(r) + plus.Get(r) - minus.Get(r)
					if free > largest[r] || largestNode[r] == "" {
						largest[r], largestNode[r] = free, nc.Node.Name
					}
				}
			}
			continue
		}
		cf := freeOf(ch, el, key)
		for r := range g.Request {
			// The first node with the chunk's largest amount is the one a scan of its nodes would keep.
			if free, j := cf.largestOf(r); free > largest[r] || largestNode[r] == "" {
				largest[r], largestNode[r] = free, ch.Nodes[j].Node.Name
			}
		}
	}
	if allowedNodes == 0 {
		if p.c.NodeCount == 0 {
			return who + " fits no node: the cluster has no nodes"
		}
		return who + " fits no node: " + p.notAllowed(g, key)
	}
	// As kube-scheduler does, the nodes the pod may not use are named too: a pod short of GPUs on the nodes it
	// tolerates most often lacks the toleration of the GPU nodes' taint.
	others := ""
	if allowedNodes < p.c.NodeCount {
		others = "; " + p.notAllowed(g, key)
	}
	for r, want := range g.Request {
		if want > 0 && want > largest[r] {
			return fmt.Sprintf("%s (%s %s) fits no node: largest free %s on %s%s", who, p.rt.Name(r),
				p.rt.Quantity(r, want), p.rt.Quantity(r, max(0, largest[r])), largestNode[r], others)
		}
	}
	if kept := p.apartAllowed(g, key); kept > 0 {
		const why = "the domains its workload's exclusive units took, which their controller keeps the workload's other pods out of"
		if kept == allowedNodes {
			return fmt.Sprintf("%s (%s) fits no node: the %d nodes it may use are all in %s%s", who, p.rt.Format(g.Request),
				allowedNodes, why, others)
		}
		return fmt.Sprintf("%s (%s) fits no node: none of the %d nodes it may use outside %s (%d nodes) has all of it "+
			"free at once%s", who, p.rt.Format(g.Request), allowedNodes-kept, why, kept, others)
	}
	if len(g.NodeExclusive) > 0 && p.nodeExclusive != nil {
		return fmt.Sprintf("%s (%s) fits no node: none of the %d allowed nodes has room for it where no other pod of the "+
			"workload holds %s (one pod per node)%s", who, p.rt.Format(g.Request), allowedNodes, strings.Join(g.NodeExclusive, ", "), others)
	}
	return fmt.Sprintf("%s (%s) fits no node: none of the %d allowed nodes has all of it free at once%s",
		who, p.rt.Format(g.Request), allowedNodes, others)
}

// apartAllowed counts the nodes g may use that its workload's units that are alone keep it out of.
func (p *packer) apartAllowed(g *structs.PodGroup, key string) int {
	n := 0
	for k := range p.apart[g] {
		if eligibilityOf(p.c.Chunks[k.chunk], g, key).mask[k.node] {
			n++
		}
	}
	return n
}

// notAllowed counts the cluster's nodes that may not take pods of g, per reason. The chunks' counts merged in
// chunk order keep the order in which the reasons first occur over the cluster's nodes.
func (p *packer) notAllowed(g *structs.PodGroup, key string) string {
	var rejected []reasonCount
	for _, ch := range p.c.Chunks {
		for _, rc := range eligibilityOf(ch, g, key).rejected {
			if i := slices.IndexFunc(rejected, func(x reasonCount) bool { return x.why == rc.why }); i >= 0 {
				rejected[i].n += rc.n
			} else {
				rejected = append(rejected, rc)
			}
		}
	}
	parts := make([]string, len(rejected))
	for i, rc := range rejected {
		parts[i] = fmt.Sprintf("%d %s", rc.n, rejectPhrase(rc.why, rc.n))
	}
	return strings.Join(parts, ", ")
}

func rejectPhrase(why string, n int) string {
	node := "nodes"
	if n == 1 {
		node = "node"
	}
	switch why {
	case "node name":
		return node + " other than its spec.nodeName"
	case "unschedulable":
		return node + " cordoned"
	case "node selector":
		return node + " not matching its nodeSelector"
	case "node affinity":
		return node + " not matching its required node affinity"
	default: // a taint
		return node + " with untolerated " + why
	}
}

// cordonTaint is what kube-scheduler's NodeUnschedulable filter checks a pod's tolerations against.
var cordonTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// toleratesCordon reports whether pods with these tolerations may run on a cordoned node.
func toleratesCordon(tolerations []corev1.Toleration) bool {
	return slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tolerates(&tol, &cordonTaint) })
}
