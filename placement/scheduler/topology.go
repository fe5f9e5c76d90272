package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// topologyLimits is how many more pods of the group being packed each domain takes, per topology key its hard
// spread constraints (PodGroup.SpreadConstraints) and its pod affinities to itself (PodGroup.AffinityKeys) name:
// per key, per value.
type topologyLimits struct {
	keys      []string
	remaining []map[string]int64
}

// admits reports whether node n lies in a domain of every constraint that takes one more pod; a node without a
// constraint's topology key is in none (kube-scheduler's PodTopologySpread filter turns it down).
func (l *topologyLimits) admits(n *structs.Node) bool {
	return l.room(n, 1) > 0
}

// room is how many of up to limit more pods the domains of n take.
func (l *topologyLimits) room(n *structs.Node, limit int64) int64 {
	for i, key := range l.keys {
		value, ok := n.Labels.Get(key)
		if !ok {
			return 0
		}
		limit = min(limit, l.remaining[i][value])
	}
	return max(limit, 0)
}

// took records n pods placed on node.
func (l *topologyLimits) took(node *structs.Node, n int64) {
	for i, key := range l.keys {
		if value, ok := node.Labels.Get(key); ok {
			l.remaining[i][value] -= n
		}
	}
}

// spreadLimits works out, before the pods of it are packed, how many of them each domain takes under each of its
// hard spread constraints. kube-scheduler places a pod in a domain only while that domain holds at most maxSkew
// more than the emptiest, and a domain the pods cannot use (full, tainted, too small) stays empty: so no domain
// takes more than the least room of any domain plus maxSkew, and within that the pods go round the domains
// evenly, as pods placed one at a time do. It returns the reason when that leaves room for fewer than all the
// pods. The room of a domain is what the group's pods find free on its nodes now, after the gang's groups
// packed before it.
//
// Pods with a required pod affinity to themselves all go to one domain of its key: the first, by name, with room
// for all of them, as kube-scheduler keeps every pod after the first to the first's domain.
//
// With more than one key (a spread by zone and one by node, say) the spreads only bound their domains, at the
// least room plus maxSkew, rather than set how many each takes: targets worked out key by key would each put
// pods on other nodes, and no node could satisfy them all. Of several pod affinities, one by node keeps the pods
// on one node, in one domain of any other key too.
func (p *packer) spreadLimits(it item, key string) (*topologyLimits, string) {
	g := it.group
	limits := &topologyLimits{}
	affinityKeys := g.AffinityKeys
	if len(affinityKeys) > 1 {
		if slices.Contains(affinityKeys, corev1.LabelHostname) {
			affinityKeys = []string{corev1.LabelHostname}
		} else {
			affinityKeys = affinityKeys[:1]
		}
	}
	boundsOnly := len(g.SpreadConstraints)+len(affinityKeys) > 1
	for _, c := range g.SpreadConstraints {
		room := p.domainRoom(it, key, c)
		targets, reason := spreadTargets(room, it.count, c)
		if reason != "" {
			return nil, fmt.Sprintf("%s fits no node: %s", podOf(g.Component), reason)
		}
		if boundsOnly {
			targets = spreadBounds(room, c)
		}
		limits.keys = append(limits.keys, c.TopologyKey)
		limits.remaining = append(limits.remaining, targets)
	}
	for _, topologyKey := range affinityKeys {
		// Pod affinity honours the pods' node selector and affinity, and taints too.
		targets, reason := togetherTargets(p.domainRoom(it, key, structs.SpreadConstraint{TopologyKey: topologyKey, TaintsHonored: true}),
			it.count, topologyKey)
		if reason != "" {
			return nil, fmt.Sprintf("%s fits no node: %s", podOf(g.Component), reason)
		}
		limits.keys = append(limits.keys, topologyKey)
		limits.remaining = append(limits.remaining, targets)
	}
	return limits, ""
}

// togetherTargets puts all count pods in the first domain, by name, with room for them, or says how many the
// roomiest holds.
func togetherTargets(room map[string]int64, count int64, topologyKey string) (map[string]int64, string) {
	domains := make([]string, 0, len(room))
	for value := range room {
		domains = append(domains, value)
	}
	sort.Strings(domains)
	if len(domains) == 0 {
		return nil, fmt.Sprintf("no node it may use has the label %s its required pod affinity to its own pods keeps them together by",
			topologyKey)
	}
	roomiest := domains[0]
	for _, d := range domains {
		if room[d] >= count {
			return map[string]int64{d: count}, ""
		}
		if room[d] > room[roomiest] {
			roomiest = d
		}
	}
	return nil, fmt.Sprintf("its required pod affinity to its own pods keeps all %d of them in one %s, and the roomiest, %s=%s, "+
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
			value, ok := n.Labels.Get(c.TopologyKey)
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

// spreadBounds is, per domain of one constraint, the most pods it may take: no more than the least room of any
// domain plus maxSkew (the least counted as none below minDomains).
func spreadBounds(room map[string]int64, c structs.SpreadConstraint) map[string]int64 {
	floor := int64(-1)
	for _, r := range room {
		if floor < 0 || r < floor {
			floor = r
		}
	}
	if int64(len(room)) < c.MinDomains {
		floor = 0
	}
	bounds := make(map[string]int64, len(room))
	for d, r := range room {
		bounds[d] = min(r, floor+c.MaxSkew)
	}
	return bounds
}

// spreadTargets spreads count pods over the domains of one constraint, each holding room of them at most: at the
// lowest level L (every domain taking min(room, L)) that holds them all, the first domains by name take L and
// the rest L-1, so no two differ by more than one but where room runs out. L may not pass the least room plus
// maxSkew; when that holds fewer than count pods, the reason says what bounds them.
func spreadTargets(room map[string]int64, count int64, c structs.SpreadConstraint) (map[string]int64, string) {
	domains := make([]string, 0, len(room))
	for value := range room {
		domains = append(domains, value)
	}
	sort.Strings(domains)
	if len(domains) == 0 {
		return nil, fmt.Sprintf("no node it may use has the label %s its topologySpreadConstraint spreads over", c.TopologyKey)
	}
	least := slices.MinFunc(domains, func(a, b string) int { return cmp.Compare(room[a], room[b]) })
	floor := room[least]
	if int64(len(domains)) < c.MinDomains {
		floor = 0
	}
	ceiling := floor + c.MaxSkew
	// held is how many pods the domains hold at level L, counted no further than count.
	held := func(level int64) int64 {
		var total int64
		for _, d := range domains {
			if total += min(room[d], level); total >= count {
				return count
			}
		}
		return total
	}
	if most := held(ceiling); most < count {
		bound := fmt.Sprintf("%s=%s has room for %d of them, so no other takes more than %d", c.TopologyKey, least, floor, ceiling)
		if int64(len(domains)) < c.MinDomains {
			bound = fmt.Sprintf("%d values of %s are fewer than its minDomains %d, so none takes more than %d",
				len(domains), c.TopologyKey, c.MinDomains, ceiling)
		}
		return nil, fmt.Sprintf("%d of its %d pods fit under its topologySpreadConstraint on %s (maxSkew %d): %s",
			most, count, c.TopologyKey, c.MaxSkew, bound)
	}
	level := sort.Search(int(min(ceiling, count)), func(l int) bool { return held(int64(l)+1) >= count }) + 1
	targets := make(map[string]int64, len(domains))
	extra := count
	for _, d := range domains {
		targets[d] = min(room[d], int64(level-1))
		extra -= targets[d]
	}
	for _, d := range domains {
		if extra > 0 && room[d] >= int64(level) {
			targets[d]++
			extra--
		}
	}
	return targets, ""
}
