package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// packConstrained places the pods of a group with hard topology spread constraints or pod affinities to
// itself one at a time, as kube-scheduler does: each goes to an allowed node with room where, for every spread
// constraint, its domain would hold at most maxSkew more of the group's pods than the emptiest domain (a domain
// the pods cannot use stays empty and so bounds the others), and, for every affinity, the domain of the pods
// placed before it. Among those it takes the node whose domains hold the fewest, spreading as kube-scheduler's
// scoring does, the first by name among equals. It returns the assignments, or why not every pod fits.
func (p *packer) packConstrained(it item, key string) ([]ownedAssignment, string) {
	g := it.group
	type spread struct {
		c       structs.SpreadConstraint
		counts  map[string]int64 // pods of the group per domain, every domain listed
		domains int
	}
	spreads := make([]*spread, len(g.SpreadConstraints))
	for i, c := range g.SpreadConstraints {
		spreads[i] = &spread{c: c, counts: map[string]int64{}}
	}
	affinityKeys := g.AffinityKeys
	chosen := make([]string, len(affinityKeys)) // the domain of the first pod, per affinity key
	// kube-scheduler's scoring sends the first pod where there is most room, and the others follow it: here the
	// pods keep to the first domain, by name, with room for all of them, of the finest key (a node's, which
	// implies the others').
	if len(affinityKeys) > 0 {
		first := 0
		if i := slices.Index(affinityKeys, corev1.LabelHostname); i >= 0 {
			first = i
		}
		domain, reason := togetherDomain(p.domainRoom(it, key, structs.SpreadConstraint{TopologyKey: affinityKeys[first],
			TaintsHonored: true}), it.count, affinityKeys[first])
		if reason != "" {
			return nil, podOf(g.Component) + ": " + reason
		}
		chosen[first] = domain
	}
	var nodes []nodeKey
	for ci, ch := range p.c.Chunks {
		el := eligibilityOf(ch, g, key)
		for j, nc := range ch.Nodes {
			for _, sp := range spreads {
				if value, ok := domainOf(nc.Node, sp.c.TopologyKey); ok && inSpreadDomain(nc.Node, g, sp.c) {
					if _, seen := sp.counts[value]; !seen {
						sp.counts[value], sp.domains = 0, sp.domains+1
					}
				}
			}
			if el.mask[j] {
				nodes = append(nodes, nodeKey{ci, j})
			}
		}
	}
	perNode := map[nodeKey]int64{}
	var order []nodeKey
	for placed := int64(0); placed < it.count; {
		floors := make([]int64, len(spreads))
		for i, sp := range spreads {
			floors[i] = -1
			for _, n := range sp.counts {
				if floors[i] < 0 || n < floors[i] {
					floors[i] = n
				}
			}
			if int64(sp.domains) < sp.c.MinDomains || floors[i] < 0 {
				floors[i] = 0
			}
		}
		best, bestLoad := nodeKey{chunk: -1}, int64(-1)
	candidates:
		for _, k := range nodes {
			n := p.c.Chunks[k.chunk].Nodes[k.node].Node
			var load int64
			for i, sp := range spreads {
				value, ok := domainOf(n, sp.c.TopologyKey)
				if !ok {
					continue candidates
				}
				if sp.counts[value]+1-floors[i] > sp.c.MaxSkew {
					continue candidates
				}
				load += sp.counts[value]
			}
			for i, topologyKey := range affinityKeys {
				value, ok := domainOf(n, topologyKey)
				if !ok || chosen[i] != "" && value != chosen[i] {
					continue candidates
				}
			}
			if !p.hasRoom(k, g) {
				continue
			}
			if bestLoad < 0 || load < bestLoad {
				best, bestLoad = k, load
			}
		}
		if best.chunk < 0 {
			return nil, p.constrainedReason(it, key, placed)
		}
		n := p.c.Chunks[best.chunk].Nodes[best.node].Node
		// As many pods at once as the node takes and no spread's skew refuses, counted against the emptiest domains
		// as they are now (placing pods only raises them): one step per pod would cost a walk of the nodes each.
		batch := p.roomFor(best, g, it.count-placed)
		for i, sp := range spreads {
			value, _ := domainOf(n, sp.c.TopologyKey)
			batch = min(batch, floors[i]+sp.c.MaxSkew-sp.counts[value])
		}
		batch = max(batch, 1)
		p.place(best, g, batch)
		for _, sp := range spreads {
			value, _ := domainOf(n, sp.c.TopologyKey)
			sp.counts[value] += batch
		}
		for i, topologyKey := range affinityKeys {
			chosen[i], _ = domainOf(n, topologyKey)
		}
		if perNode[best] == 0 {
			order = append(order, best)
		}
		perNode[best] += batch
		placed += batch
	}
	out := make([]ownedAssignment, 0, len(order))
	for _, k := range order {
		out = append(out, ownedAssignment{owner: it.owner, Assignment: structs.Assignment{Cluster: p.c.Name,
			Node: p.c.Chunks[k.chunk].Nodes[k.node].Node.Name, Component: g.Component, Pods: perNode[k], PodRequest: g.Request}})
	}
	return out, ""
}

// domainOf is node n's value of topology key key. The kubelet labels every node with its hostname; a node
// described without the label (a simulated one) is its own host.
func domainOf(n *structs.Node, key string) (string, bool) {
	if value, ok := n.Labels.Get(key); ok {
		return value, true
	}
	if key == corev1.LabelHostname {
		return n.Name, true
	}
	return "", false
}

// constrainedReason says why only placed of the pods of it fit: for a single constraint, what bounds them (see
// spreadShortfall and togetherDomain); otherwise how many fit and under what. The capacity the failed attempt
// took is read as it stands, which is what the reason describes.
func (p *packer) constrainedReason(it item, key string, placed int64) string {
	g := it.group
	who := podOf(g.Component)
	if len(g.SpreadConstraints)+len(g.AffinityKeys) == 1 {
		fresh := &packer{rt: p.rt, c: p.c, g: p.g, ownTotal: p.ownTotal}
		var reason string
		if len(g.SpreadConstraints) == 1 {
			reason = spreadShortfall(fresh.domainRoom(it, key, g.SpreadConstraints[0]), it.count, g.SpreadConstraints[0])
		} else {
			_, reason = togetherDomain(fresh.domainRoom(it, key, structs.SpreadConstraint{TopologyKey: g.AffinityKeys[0],
				TaintsHonored: true}), it.count, g.AffinityKeys[0])
		}
		if reason != "" {
			// Each pod may fit a node: the set of them does not fit the constraint.
			return who + ": " + reason
		}
	}
	var keys []string
	for _, c := range g.SpreadConstraints {
		keys = append(keys, fmt.Sprintf("spread by %s (maxSkew %d)", c.TopologyKey, c.MaxSkew))
	}
	for _, k := range g.AffinityKeys {
		keys = append(keys, "together by "+k)
	}
	return fmt.Sprintf("%s: %d of its %d pods fit, placed one at a time as kube-scheduler does, under its %s",
		who, placed, it.count, strings.Join(keys, " and "))
}

// togetherDomain is the first domain, by name, with room for all count pods, or says how many the roomiest holds.
func togetherDomain(room map[string]int64, count int64, topologyKey string) (string, string) {
	domains := make([]string, 0, len(room))
	for value := range room {
		domains = append(domains, value)
	}
	sort.Strings(domains)
	if len(domains) == 0 {
		return "", fmt.Sprintf("no node it may use has the label %s, by which its required pod affinity to its own pods keeps "+
			"them together", topologyKey)
	}
	roomiest := domains[0]
	for _, d := range domains {
		if room[d] >= count {
			return d, ""
		}
		if room[d] > room[roomiest] {
			roomiest = d
		}
	}
	return "", fmt.Sprintf("its required pod affinity to its own pods keeps all %d of them in one %s, and the roomiest, %s=%s, "+
		"has room for %d", count, topologyKey, topologyKey, roomiest, room[roomiest])
}

// domainRoom is, per domain of constraint c, how many of the pods of it its nodes have room for (up to all of
// them); a domain none of whose nodes may take the pods has room for none.
func (p *packer) domainRoom(it item, key string, c structs.SpreadConstraint) map[string]int64 {
	g := it.group
	room := map[string]int64{}
	for ci, ch := range p.c.Chunks {
		el := eligibilityOf(ch, g, key)
		for j, nc := range ch.Nodes {
			n := nc.Node
			value, ok := domainOf(n, c.TopologyKey)
			if !ok || !inSpreadDomain(n, g, c) {
				continue
			}
			held := room[value]
			if el.mask[j] && held < it.count && p.hasRoom(nodeKey{ci, j}, g) {
				held = min(it.count, held+p.roomFor(nodeKey{ci, j}, g, it.count))
			}
			room[value] = held
		}
	}
	return room
}

// inSpreadDomain reports whether node n counts as a domain of c for the pods of g: it matches their node selector
// and required affinity (unless the constraint ignores them), and its taints count only when the constraint
// honours them.
func inSpreadDomain(n *structs.Node, g *structs.PodGroup, c structs.SpreadConstraint) bool {
	if !c.AffinityIgnored && (!matchesNodeSelector(g.NodeSelector, n.Labels) || !matchesNodeAffinity(g.RequiredNodeAffinity, n.Name, n.Labels)) {
		return false
	}
	if c.TaintsHonored && (untoleratedTaint(n.Taints, g.Tolerations) != nil || n.Unschedulable && !toleratesCordon(g.Tolerations)) {
		return false
	}
	return true
}

// spreadShortfall says why not all count pods fit the domains of one constraint, each holding room of them at
// most: none takes more than the least room of any domain plus maxSkew (the least counted as none below
// minDomains), and those bounds may hold fewer than count. "" when they hold them all.
func spreadShortfall(room map[string]int64, count int64, c structs.SpreadConstraint) string {
	domains := make([]string, 0, len(room))
	for value := range room {
		domains = append(domains, value)
	}
	sort.Strings(domains)
	if len(domains) == 0 {
		return fmt.Sprintf("no node it may use has the label %s its topologySpreadConstraint spreads over", c.TopologyKey)
	}
	least := slices.MinFunc(domains, func(a, b string) int { return cmp.Compare(room[a], room[b]) })
	floor := room[least]
	if int64(len(domains)) < c.MinDomains {
		floor = 0
	}
	ceiling := floor + c.MaxSkew
	var most int64 // counted no further than count
	for _, d := range domains {
		if most += min(room[d], ceiling); most >= count {
			return ""
		}
	}
	bound := fmt.Sprintf("%s=%s has room for %d of them, so no other takes more than %d", c.TopologyKey, least, floor, ceiling)
	if int64(len(domains)) < c.MinDomains {
		bound = fmt.Sprintf("%d values of %s are fewer than its minDomains %d, so none takes more than %d",
			len(domains), c.TopologyKey, c.MinDomains, ceiling)
	}
	return fmt.Sprintf("%d of its %d pods fit under its topologySpreadConstraint on %s (maxSkew %d): %s",
		most, count, c.TopologyKey, c.MaxSkew, bound)
}
