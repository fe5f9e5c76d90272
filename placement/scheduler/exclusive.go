package scheduler

import (
	"fmt"
	"sort"
	"strings"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// gangUnit is an exclusive-topology unit of one of a gang's workloads (structs.ExclusiveUnit).
type gangUnit struct {
	owner    int
	workload *structs.Workload
	key      string
	pods     []item
	// alone: the workload's pods outside its units keep out of the unit's domain (structs.ExclusiveUnit.Alone).
	alone bool
	// allNamespaces: the unit keeps out of the domains of its kind's workloads in every namespace
	// (structs.ExclusiveUnit.AllNamespaces).
	allNamespaces bool
}

// String renders the unit's pods as "leader 1 + worker 3".
func (u gangUnit) String() string {
	parts := make([]string, 0, len(u.pods))
	for _, it := range u.pods {
		parts = append(parts, fmt.Sprintf("%s %d", it.group.Component, it.count))
	}
	return strings.Join(parts, " + ")
}

// gangUnits returns the exclusive units of workload wl (the gang's owner-th), and how many pods of each of its
// pod groups they hold: the group's items leave those out.
func gangUnits(owner int, wl *structs.Workload) ([]gangUnit, []int64) {
	if len(wl.ExclusiveUnits) == 0 {
		return nil, nil
	}
	held := make([]int64, len(wl.PodGroups))
	units := make([]gangUnit, 0, len(wl.ExclusiveUnits))
	for _, u := range wl.ExclusiveUnits {
		gu := gangUnit{owner: owner, workload: wl, key: u.TopologyKey, alone: u.Alone, allNamespaces: u.AllNamespaces}
		for _, p := range u.Pods {
			if p.Group < 0 || p.Group >= len(wl.PodGroups) || p.Count <= 0 {
				continue
			}
			held[p.Group] += p.Count
			gu.pods = append(gu.pods, item{owner: owner, group: &wl.PodGroups[p.Group], count: p.Count})
		}
		if len(gu.pods) > 0 {
			units = append(units, gu)
		}
	}
	return units, held
}

// domain is the nodes of a cluster that share one value of a topology key, in chunk order.
type domain struct {
	value string
	nodes []nodeKey
}

// domainsOf lists the domains of topology key key among the cluster's nodes, by value.
func (p *packer) domainsOf(key string) []domain {
	index := map[string]int{}
	var out []domain
	for ci, ch := range p.c.Chunks {
		for j, nc := range ch.Nodes {
			value, ok := domainOf(nc.Node, key)
			if !ok {
				continue
			}
			i, seen := index[value]
			if !seen {
				i = len(out)
				index[value] = i
				out = append(out, domain{value: value})
			}
			out[i].nodes = append(out[i].nodes, nodeKey{ci, j})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].value < out[b].value })
	return out
}

// packUnits places each exclusive unit of the gang, before the rest of its pods, in a domain of the unit's key
// that no other unit with that key uses, as the pod affinity and anti-affinity the workload's controller adds
// keep it: in the first domain, by value, where all of the unit's pods fit. It returns the assignments, or why a
// unit fits no domain left. The nodes of the domain of a unit that is alone are kept from the workload's other
// pods (packer.apart).
func (p *packer) packUnits() ([]ownedAssignment, string) {
	domainsByKey := map[string][]domain{}
	taken := map[string]map[string]bool{}
	type aloneUnit struct {
		domain   domain
		workload *structs.Workload
	}
	var alone []aloneUnit
	var out []ownedAssignment
	for ui, u := range p.g.units {
		domains, ok := domainsByKey[u.key]
		if !ok {
			domains = p.domainsOf(u.key)
			domainsByKey[u.key] = domains
			taken[u.key] = map[string]bool{}
		}
		held := p.held[heldKey{owner: u.owner, key: u.key, allNamespaces: u.allNamespaces}]
		placed := false
		for _, d := range domains {
			if taken[u.key][d.value] || held[d.value] {
				continue
			}
			if assignments, ok := p.packUnitIn(u, d); ok {
				out = append(out, assignments...)
				taken[u.key][d.value] = true
				placed = true
				if u.alone {
					alone = append(alone, aloneUnit{domain: d, workload: u.workload})
				}
				break
			}
		}
		if !placed {
			return nil, p.unitReason(ui, u, domains, held)
		}
	}
	// Only now: the units' own pods may share a node with another unit's of a different key.
	for _, a := range alone {
		for gi := range a.workload.PodGroups {
			g := &a.workload.PodGroups[gi]
			if p.apart == nil {
				p.apart = map[*structs.PodGroup]map[nodeKey]bool{}
			}
			if p.apart[g] == nil {
				p.apart[g] = map[nodeKey]bool{}
			}
			for _, k := range a.domain.nodes {
				p.apart[g][k] = true
			}
		}
	}
	return out, ""
}

// packUnitIn packs every pod of unit u onto the nodes of domain d, first fit, or takes back what it packed and
// reports false when they do not all fit.
func (p *packer) packUnitIn(u gangUnit, d domain) ([]ownedAssignment, bool) {
	type taking struct {
		at        nodeKey
		req       structs.Vector
		pods      int64
		exclusive int // length of p.nodeExclusive[at] before the taking
	}
	var takings []taking
	var out []ownedAssignment
	undo := func() {
		for i := len(takings) - 1; i >= 0; i-- {
			t := takings[i]
			p.take(t.at, t.req, -t.pods)
			if p.nodeExclusive != nil {
				p.nodeExclusive[t.at] = p.nodeExclusive[t.at][:t.exclusive]
			}
		}
	}
	for _, it := range u.pods {
		g := it.group
		key := memoKey(g)
		remaining := it.count
		for _, k := range d.nodes {
			if remaining == 0 {
				break
			}
			if !eligibilityOf(p.c.Chunks[k.chunk], g, key).mask[k.node] || !p.hasRoom(k, g) {
				continue
			}
			n := p.roomFor(k, g, remaining)
			t := taking{at: k, req: g.Request, pods: n}
			if p.nodeExclusive != nil {
				t.exclusive = len(p.nodeExclusive[k])
			}
			p.place(k, g, n)
			takings = append(takings, t)
			remaining -= n
			out = append(out, ownedAssignment{owner: it.owner, Assignment: structs.Assignment{Cluster: p.c.Name,
				Node: p.c.Chunks[k.chunk].Nodes[k.node].Node.Name, Component: g.Component, Pods: n, PodRequest: g.Request}})
		}
		if remaining > 0 {
			undo()
			return nil, false
		}
	}
	return out, true
}

// unitReason says why unit ui of the gang, u, fits no domain left: how many units did, and how many domains of its
// key could hold it alone, with nothing else of the gang packed.
func (p *packer) unitReason(ui int, u gangUnit, domains []domain, held map[string]bool) string {
	total := 0
	for _, other := range p.g.units {
		if other.owner == u.owner && other.key == u.key {
			total++
		}
	}
	if len(domains) == 0 {
		return fmt.Sprintf("its exclusive topology keeps %s (%s) in a %s of its own, and no node has the "+
			"label %s", eachOfUnits(total), u, u.key, u.key)
	}
	roomy, roomyHeld := 0, 0
	for _, d := range domains {
		fresh := &packer{rt: p.rt, c: p.c, g: p.g, ownTotal: p.ownTotal}
		if _, ok := fresh.packUnitIn(u, d); ok {
			roomy++
			if held[d.value] {
				roomyHeld++
			}
		}
	}
	placed := 0
	for _, other := range p.g.units[:ui] {
		if other.owner == u.owner && other.key == u.key {
			placed++
		}
	}
	others := ""
	if roomyHeld > 0 {
		of := "of namespace " + u.workload.Namespace
		if u.allNamespaces {
			of = "of any namespace"
		}
		others = fmt.Sprintf(" (%d of them held by other %ss %s, whose pods its controller keeps apart)",
			roomyHeld, u.workload.Kind, of)
	}
	return fmt.Sprintf("its exclusive topology keeps %s (%s) in a %s of its own: %s of %s on the "+
		"cluster's nodes %s room for one%s, and %s before this one", eachOfUnits(total), u, u.key,
		countOf(roomy, len(domains)), u.key, hasOrHave(roomy, len(domains)), others, fitted(placed))
}

// heldKey names the domains of one topology key that a gang's owner-th workload may not use.
type heldKey struct {
	owner         int
	key           string
	allNamespaces bool
}

// domainsHeld returns, for the exclusive units of gang g, the domains of their key on cluster cc where other
// workloads of the same kind in the same namespace (in any namespace for a unit with allNamespaces) run pods or
// hold a reservation: placed there, or placed nowhere with their copies still running (Kept). The controllers' pod
// anti-affinity keeps a unit out of them: it is to every pod of the kind in the namespace (LeaderWorkerSet's
// group-key label), or in every namespace (JobSet's job-key label), which all their pods carry, exclusive or not.
// Only gangs with units pay for it: a read of the workloads of their kind and namespace, and one walk over the
// cluster's nodes per topology key.
func (c *cycle) domainsHeld(cc *structs.ClusterCapacity, g *gang) map[heldKey]map[string]bool {
	own := map[string]bool{}
	for _, u := range g.units {
		own[u.workload.ID] = true
	}
	out := map[heldKey]map[string]bool{}
	for _, u := range g.units {
		hk := heldKey{owner: u.owner, key: u.key, allNamespaces: u.allNamespaces}
		if _, done := out[hk]; done {
			continue
		}
		held := map[string]bool{}
		out[hk] = held
		// labels maps the pod label of each other workload of the unit's kind and namespace (or any) to its ID.
		labels := map[string]string{}
		for _, m := range c.workloadsOfKind(u.workload, u.allNamespaces) {
			if !own[m.id] {
				labels[m.label] = m.id
			}
		}
		if len(labels) == 0 {
			continue
		}
		for _, ch := range cc.Chunks {
			for _, nc := range ch.Nodes {
				if len(nc.Node.PodsByWorkload) == 0 || !runsAny(nc.Node.PodsByWorkload, labels) {
					continue
				}
				if value, ok := domainOf(nc.Node, u.key); ok {
					held[value] = true
				}
			}
		}
		for _, id := range labels {
			for _, r := range c.st.ReservationsOf(id) {
				for _, nr := range r.Nodes {
					if nr.Cluster != cc.Name {
						continue
					}
					if nc := cc.Node(nr.Node); nc != nil {
						if value, ok := domainOf(nc.Node, u.key); ok {
							held[value] = true
						}
					}
				}
			}
		}
	}
	return out
}

// kindMember is a workload of a kind in a namespace, with the label value its pods carry.
type kindMember struct{ id, label string }

// workloadsOfKind returns the workloads of wl's group and kind in its namespace, or in every namespace with
// allNamespaces, wl among them.
func (c *cycle) workloadsOfKind(wl *structs.Workload, allNamespaces bool) []kindMember {
	key := wl.Group + "/" + wl.Kind + "/" + wl.Namespace
	found := func() []*structs.Workload { return c.st.WorkloadsOfKind(wl.Group, wl.Kind, wl.Namespace) }
	if allNamespaces {
		// "/" ends no namespace name, so this key names no single namespace.
		key = wl.Group + "/" + wl.Kind + "/" + "/"
		found = func() []*structs.Workload { return c.st.WorkloadsOfKindInAllNamespaces(wl.Group, wl.Kind) }
	}
	if members, ok := c.ofKind[key]; ok {
		return members
	}
	var members []kindMember
	for _, w := range found() {
		if w.Group == wl.Group && w.Kind == wl.Kind && (allNamespaces || w.Namespace == wl.Namespace) {
			members = append(members, kindMember{id: w.ID, label: structs.WorkloadLabelValue(w.ID)})
		}
	}
	if c.ofKind == nil {
		c.ofKind = map[string][]kindMember{}
	}
	c.ofKind[key] = members
	return members
}

// runsAny reports whether a node's pods by workload label count a pod of one of labels.
func runsAny(pods map[string]int64, labels map[string]string) bool {
	if len(labels) < len(pods) {
		for label := range labels {
			if pods[label] > 0 {
				return true
			}
		}
		return false
	}
	for label, n := range pods {
		if _, ok := labels[label]; ok && n > 0 {
			return true
		}
	}
	return false
}

// eachOfUnits reads "each of its 3 units", or "its 1 unit".
func eachOfUnits(n int) string {
	if n == 1 {
		return "its 1 unit"
	}
	return fmt.Sprintf("each of its %d units", n)
}

// countOf reads "1 of the 2 values" or "the 1 value" (n of all).
func countOf(n, all int) string {
	if all == 1 {
		if n == 1 {
			return "the 1 value"
		}
		return "none of the 1 value"
	}
	return fmt.Sprintf("%d of the %d values", n, all)
}

// hasOrHave agrees with countOf.
func hasOrHave(n, all int) string {
	if all == 1 {
		return "has"
	}
	return "have"
}

// fitted reads "no unit fitted", "1 unit fitted" or "2 units fitted".
func fitted(n int) string {
	switch n {
	case 0:
		return "no unit fitted"
	case 1:
		return "1 unit fitted"
	default:
		return fmt.Sprintf("%d units fitted", n)
	}
}
