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

// ownCapacity collects the reservations the given workloads hold on one cluster.
func ownCapacity(st State, cluster string, workloadIDs []string) map[string]structs.Vector {
	var own map[string]structs.Vector
	for _, id := range workloadIDs {
		for _, r := range st.ReservationsOf(id) {
			if r.Cluster != cluster {
				continue
			}
			if own == nil {
				own = map[string]structs.Vector{}
			}
			own[r.Node] = own[r.Node].Add(r.Request)
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
	rt   *structs.ResourceTable
	c    *structs.ClusterCapacity
	g    *gang
	used map[int]structs.Vector
}

// pack places every pod of the gang with first-fit-decreasing: pod groups in decreasing order of their dominant
// share of the cluster, each pod on the first node (by name) where it is allowed and fits. Pods of one group are
// identical and free capacity only shrinks while packing, so a group resumes from the node where its previous pod
// went. It returns the assignments, or the reason the first pod that fit nowhere did not fit.
func (p *packer) pack() ([]ownedAssignment, string) {
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
		pos := 0
		placed := int64(0)
		for placed < it.count {
			for pos < len(p.c.Nodes) && !p.fits(pos, it.group) {
				pos++
			}
			if pos == len(p.c.Nodes) {
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
				Cluster: p.c.Name, Node: p.c.Nodes[pos].Node.Name, Component: it.group.Component,
				Pods: n, PodRequest: it.group.Request}})
		}
	}
	return out, ""
}

// free returns what node i has left for this gang, or nil when it is the stored free vector unchanged.
func (p *packer) adjust(i int) (plus, minus structs.Vector) {
	if len(p.g.own) > 0 {
		plus = p.g.own[p.c.Nodes[i].Node.Name]
	}
	if len(p.used) > 0 {
		minus = p.used[i]
	}
	return plus, minus
}

func (p *packer) fits(i int, g *structs.PodGroup) bool {
	nc := p.c.Nodes[i]
	plus, minus := p.adjust(i)
	for r, want := range g.Request {
		if want > 0 && want > nc.Free.Get(r)+plus.Get(r)-minus.Get(r) {
			return false
		}
	}
	return allowed(nc.Node, g) == ""
}

func (p *packer) take(i int, req structs.Vector) {
	if p.used == nil {
		p.used = map[int]structs.Vector{}
	}
	u := p.used[i]
	if u == nil {
		u = make(structs.Vector, p.rt.Len())
		p.used[i] = u
	}
	u.AddInPlace(req, 1)
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
	for i, nc := range p.c.Nodes {
		if why := allowed(nc.Node, g); why != "" {
			if rejected[why] == 0 {
				rejectOrder = append(rejectOrder, why)
			}
			rejected[why]++
			continue
		}
		allowedNodes++
		plus, minus := p.adjust(i)
		for r := range g.Request {
			free := nc.Free.Get(r) + plus.Get(r) - minus.Get(r)
			if free > largest[r] || largestNode[r] == "" {
				largest[r], largestNode[r] = free, nc.Node.Name
			}
		}
	}
	if allowedNodes == 0 {
		if len(p.c.Nodes) == 0 {
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
	switch {
	case why == "unschedulable":
		return node + " cordoned"
	case why == "node selector":
		return node + " not matching its nodeSelector"
	case why == "node affinity":
		return node + " not matching its required node affinity"
	default: // a taint
		return node + " with untolerated " + why
	}
}
