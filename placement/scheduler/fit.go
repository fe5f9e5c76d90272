package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

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
}

// ownReservations collects the reservations the given workloads hold, per cluster and node. Only placed
// workloads hold any, so fresh workloads cost no lookup.
func ownReservations(st State, workloads []*structs.Workload) map[string]map[string]structs.Vector {
	var own map[string]map[string]structs.Vector
	for _, wl := range workloads {
		if wl.Placement == nil {
			continue
		}
		for _, r := range st.ReservationsOf(wl.ID) {
			for _, n := range r.Nodes {
				if own == nil {
					own = map[string]map[string]structs.Vector{}
				}
				if own[n.Cluster] == nil {
					own[n.Cluster] = map[string]structs.Vector{}
				}
				own[n.Cluster][n.Node] = own[n.Cluster][n.Node].Add(n.Request)
			}
		}
	}
	return own
}

// boundCheck is the cheap cluster-level test: the gang's total demand against the cluster's total free, and each
// pod against the largest free amount any one node has. Both are necessary for a fit, so a cluster it rejects
// could never fit; it returns "" when the cluster survives.
func boundCheck(rt *structs.ResourceTable, c *structs.ClusterCapacity, g *gang) string {
	var ownTotal structs.Vector
	for _, v := range g.own {
		ownTotal = ownTotal.Add(v)
	}
	for i, want := range g.demand {
		if want == 0 {
			continue
		}
		if free := c.Free.Get(i) + ownTotal.Get(i); want > free {
			return fmt.Sprintf("needs %s %s in total, %s free", rt.Name(i), rt.Quantity(i, want), rt.Quantity(i, free))
		}
	}
	for _, it := range g.items {
		for i, want := range it.group.Request {
			if want == 0 {
				continue
			}
			if largest := c.MaxFree.Get(i) + ownTotal.Get(i); want > largest {
				if largest == 0 || c.MaxFreeNode[i] == "" {
					return fmt.Sprintf("pod %s (%s %s) fits no node: no node has %s free",
						it.group.Component, rt.Name(i), rt.Quantity(i, want), rt.Name(i))
				}
				return fmt.Sprintf("pod %s (%s %s) fits no node: largest free %s on %s",
					it.group.Component, rt.Name(i), rt.Quantity(i, want), rt.Quantity(i, largest), c.MaxFreeNode[i])
			}
		}
	}
	return ""
}

// packer packs one gang onto the nodes of one cluster.
type packer struct {
	rt *structs.ResourceTable
	c  *structs.ClusterCapacity
	g  *gang
	// ownTotal is the sum of g.own, added to chunk maxima so a chunk holding the gang's own reservations is
	// never skipped wrongly.
	ownTotal structs.Vector
	used     map[nodeKey]structs.Vector
}

// nodeKey addresses a node by chunk and position.
type nodeKey struct{ chunk, node int }

// pack places every pod of the gang with first-fit-decreasing: pod groups in decreasing order of their dominant
// share of the cluster, each pod on the first node (by name) where it is allowed and fits. Pods of one group are
// identical and free capacity only shrinks while packing, so a group resumes from the node where its previous
// pod went, and skips whole chunks whose largest free amounts cannot hold the pod. It returns the assignments,
// or the reason the first pod that fit nowhere did not fit.
func (p *packer) pack() ([]ownedAssignment, string) {
	for _, v := range p.g.own {
		p.ownTotal = p.ownTotal.Add(v)
	}
	items := slices.Clone(p.g.items)
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
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(size(b), size(a)) })

	var out []ownedAssignment
	for _, it := range items {
		pos := nodeKey{}
		placed := int64(0)
		for placed < it.count {
			var ok bool
			if pos, ok = p.next(pos, it.group); !ok {
				return nil, p.diagnose(it, placed)
			}
			// Put as many of the group's pods on this node as fit, in one assignment.
			n := int64(0)
			for placed < it.count && p.fits(pos, it.group) {
				p.take(pos, it.group.Request)
				n++
				placed++
			}
			out = append(out, ownedAssignment{owner: it.owner, Assignment: structs.Assignment{
				Cluster: p.c.Name, Node: p.c.Chunks[pos.chunk].Nodes[pos.node].Node.Name, Component: it.group.Component,
				Pods: n, PodRequest: it.group.Request}})
		}
	}
	return out, ""
}

// next returns the first node at or after pos where a pod of g fits.
func (p *packer) next(pos nodeKey, g *structs.PodGroup) (nodeKey, bool) {
	for ; pos.chunk < len(p.c.Chunks); pos = (nodeKey{chunk: pos.chunk + 1}) {
		ch := p.c.Chunks[pos.chunk]
		if !p.chunkMayFit(ch, g.Request) {
			continue
		}
		eligible := p.eligible(ch, g)
		for ; pos.node < len(ch.Nodes); pos.node++ {
			if eligible[pos.node] && p.hasRoom(pos, g) {
				return pos, true
			}
		}
	}
	return pos, false
}

// chunkMayFit is false when some request exceeds the chunk's largest free amount (plus the gang's own
// reservations), so no node of the chunk can take the pod.
func (p *packer) chunkMayFit(ch *structs.NodeChunk, req structs.Vector) bool {
	for r, want := range req {
		if want > 0 && want > ch.MaxFree.Get(r)+p.ownTotal.Get(r) {
			return false
		}
	}
	return true
}

// adjust returns what the gang's own reservations add to a node, and what packing has taken from it so far.
func (p *packer) adjust(k nodeKey, name string) (plus, minus structs.Vector) {
	if len(p.g.own) > 0 {
		plus = p.g.own[name]
	}
	if len(p.used) > 0 {
		minus = p.used[k]
	}
	return plus, minus
}

// eligible is which nodes of a chunk allow pods of g, memoized on the chunk by g's constraints.
func (p *packer) eligible(ch *structs.NodeChunk, g *structs.PodGroup) []bool {
	return ch.Eligible(g.ConstraintKey, func(n *structs.Node) bool { return isAllowed(n, g) })
}

func (p *packer) fits(k nodeKey, g *structs.PodGroup) bool {
	return p.eligible(p.c.Chunks[k.chunk], g)[k.node] && p.hasRoom(k, g)
}

func (p *packer) hasRoom(k nodeKey, g *structs.PodGroup) bool {
	nc := p.c.Chunks[k.chunk].Nodes[k.node]
	plus, minus := p.adjust(k, nc.Node.Name)
	for r, want := range g.Request {
		if want > 0 && want > nc.Free.Get(r)+plus.Get(r)-minus.Get(r) {
			return false
		}
	}
	return true
}

func (p *packer) take(k nodeKey, req structs.Vector) {
	if p.used == nil {
		p.used = map[nodeKey]structs.Vector{}
	}
	u := p.used[k]
	if u == nil {
		u = make(structs.Vector, p.rt.Len())
		p.used[k] = u
	}
	u.AddInPlace(req, 1)
}

// isAllowed reports whether a pod group may run on a node; allowed says why not.
func isAllowed(n *structs.Node, g *structs.PodGroup) bool {
	return !n.Unschedulable && matchesNodeSelector(g.NodeSelector, n.Labels) &&
		matchesNodeAffinity(g.RequiredNodeAffinity, n.Name, n.Labels) && untoleratedTaint(n.Taints, g.Tolerations) == nil
}

// allowed returns why a pod group may not run on a node, "" when it may.
func allowed(n *structs.Node, g *structs.PodGroup) string {
	switch {
	case n.Unschedulable:
		return "unschedulable"
	case !matchesNodeSelector(g.NodeSelector, n.Labels):
		return "node selector"
	case !matchesNodeAffinity(g.RequiredNodeAffinity, n.Name, n.Labels):
		return "node affinity"
	}
	if t := untoleratedTaint(n.Taints, g.Tolerations); t != nil {
		return "taint " + taintString(t.Key, t.Value, string(t.Effect))
	}
	return ""
}

func taintString(key, value, effect string) string {
	if value != "" {
		return key + "=" + value + ":" + effect
	}
	return key + ":" + effect
}

// diagnose explains why a pod of it fits no node, in the order a user can act on: no node allows the pod at all,
// one of its requests exceeds what any allowed node has free, or no allowed node has all of it free at once.
func (p *packer) diagnose(it item, placed int64) string {
	g := it.group
	who := "pod " + g.Component
	if placed > 0 {
		who = fmt.Sprintf("pod %s (%d of %d placed)", g.Component, placed, it.count)
	}
	rejected := map[string]int{}
	var rejectOrder []string
	allowedNodes := 0
	largest := make(structs.Vector, len(g.Request))
	largestNode := make([]string, len(g.Request))
	for ci, ch := range p.c.Chunks {
		eligible := p.eligible(ch, g)
		for j, nc := range ch.Nodes {
			if !eligible[j] {
				// Only worth naming when no node at all allows the pod.
				if allowedNodes == 0 {
					why := allowed(nc.Node, g)
					if rejected[why] == 0 {
						rejectOrder = append(rejectOrder, why)
					}
					rejected[why]++
				}
				continue
			}
			allowedNodes++
			plus, minus := p.adjust(nodeKey{ci, j}, nc.Node.Name)
			for r := range g.Request {
				free := nc.Free.Get(r) + plus.Get(r) - minus.Get(r)
				if free > largest[r] || largestNode[r] == "" {
					largest[r], largestNode[r] = free, nc.Node.Name
				}
			}
		}
	}
	if allowedNodes == 0 {
		if p.c.NodeCount == 0 {
			return who + " fits no node: the cluster has no nodes"
		}
		parts := make([]string, len(rejectOrder))
		for i, why := range rejectOrder {
			parts[i] = fmt.Sprintf("%d %s", rejected[why], rejectPhrase(why, rejected[why]))
		}
		return who + " fits no node: " + strings.Join(parts, ", ")
	}
	for r, want := range g.Request {
		if want > 0 && want > largest[r] {
			return fmt.Sprintf("%s (%s %s) fits no node: largest free %s on %s", who, p.rt.Name(r),
				p.rt.Quantity(r, want), p.rt.Quantity(r, max(0, largest[r])), largestNode[r])
		}
	}
	return fmt.Sprintf("%s (%s) fits no node: none of the %d allowed nodes has all of it free at once",
		who, p.rt.Format(g.Request), allowedNodes)
}

func rejectPhrase(why string, n int) string {
	node := "nodes"
	if n == 1 {
		node = "node"
	}
	switch why {
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
