package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// scheduleDuplicate puts a full copy of the workload on every candidate cluster where it fits.
func (c *cycle) scheduleDuplicate(wl *structs.Workload, p *policy.Policy) *structs.Decision {
	d := c.newDecision(wl, p)
	cands := c.filter(wl, p, d)
	g := newGang(c.rt, []*structs.Workload{wl})
	owned := ownReservations(c.st, []*structs.Workload{wl})
	for _, cand := range cands {
		if p.CapacityAware() && !c.runsAsIs(wl, cand.capacity.Name) {
			g.own = owned[cand.capacity.Name]
			assignments, reason := c.fit(cand, g)
			if reason != "" {
				c.reject(d, cand.capacity.Name, structs.RejectCapacity, reason)
				continue
			}
			for _, a := range assignments {
				d.Assignments = append(d.Assignments, a.Assignment)
			}
		}
		d.Clusters = append(d.Clusters, cand.capacity.Name)
	}
	if held := c.heldCopies(wl, p, d); len(held) > 0 {
		d.Clusters = append(d.Clusters, held...)
		slices.Sort(d.Clusters)
	}
	d.Status = structs.StatusPlaced
	if len(d.Clusters) == 0 {
		d.Status = structs.StatusUnschedulable
	}
	// Freed capacity is the one event that can admit a placed copy where it was turned away and that no
	// re-evaluation covers anyway (a changed cluster or policy re-evaluates placed workloads).
	if d.Status == structs.StatusPlaced {
		for _, code := range d.RejectCodes {
			if code == structs.RejectCapacity {
				d.Widenable = true
				break
			}
		}
	}
	return d
}

// heldCopies takes back from the rejections the clusters that hold a copy of the workload under the same
// policy and were rejected only for not being Ready. A Duplicate copy has nowhere to fail over to, since
// every other eligible cluster already runs one; withdrawing it would delete it (and, for a framework's CRD,
// every object of that kind) as soon as the cluster is reachable again, and a cluster that missed a few
// heartbeats under load would lose and regain its copies on every flap.
func (c *cycle) heldCopies(wl *structs.Workload, p *policy.Policy, d *structs.Decision) []string {
	if wl.Placement == nil || wl.Placement.Policy != p.Name {
		return nil
	}
	apiKey := structs.APIKey(wl.APIVersion, wl.Kind)
	var held []string
	for _, cc := range c.capacities {
		name := cc.Cluster.Name
		if d.RejectCodes[name] != structs.RejectNotReady || !slices.Contains(wl.Placement.Clusters, name) {
			continue
		}
		if _, avoided := wl.Avoid[name]; avoided {
			continue
		}
		ready := *cc.Cluster
		ready.Ready = true
		if v := judgeCluster(p, apiKey, &ready); v.before != nil || v.after != nil {
			continue
		}
		delete(d.Reasons, name)
		delete(d.RejectCodes, name)
		held = append(held, name)
	}
	return held
}

// divisibleGroup returns the index of the workload's only pod group when it is scalable, else -1: Divide rewrites
// one replica count per cluster, which is only meaningful when that count is the whole workload.
func divisibleGroup(wl *structs.Workload) int {
	if len(wl.PodGroups) == 1 && wl.PodGroups[0].Scalable {
		return 0
	}
	return -1
}

// SplitReplicas divides total replicas by percentages with the largest-remainder method, so the shares always sum
// to total exactly; equal remainders go to the earlier entry.
func SplitReplicas(total int64, percentages []int32) []int64 {
	shares := make([]int64, len(percentages))
	remainders := make([]int64, len(percentages))
	var given int64
	for i, pct := range percentages {
		shares[i] = total * int64(pct) / 100
		remainders[i] = total * int64(pct) % 100
		given += shares[i]
	}
	order := make([]int, len(percentages))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(remainders[b], remainders[a]) })
	for i := 0; given < total && len(order) > 0; i = (i + 1) % len(order) {
		shares[order[i]]++
		given++
	}
	return shares
}

// scheduleDivide splits the replicas of a divisible workload over the topology values of percentageSplit; each
// value's share goes to the best cluster carrying that value that fits the whole share. The workload is placed
// only if every non-empty share is.
func (c *cycle) scheduleDivide(wl *structs.Workload, p *policy.Policy) *structs.Decision {
	d := c.newDecision(wl, p)
	d.Status = structs.StatusUnschedulable
	idx := divisibleGroup(wl)
	if idx < 0 {
		d.Message = fmt.Sprintf("Divide needs a workload with exactly one scalable component; %s has %d "+
			"component instances", wl.Kind, len(wl.PodGroups))
		return d
	}
	sc := p.Spec.SpreadConstraints
	cands := c.filter(wl, p, d)
	percentages := make([]int32, len(sc.PercentageSplit))
	byValue := map[string][]candidate{}
	for i, split := range sc.PercentageSplit {
		percentages[i] = split.Percentage
		byValue[split.TopologyValue] = nil
	}
	for _, cand := range cands {
		value, ok := cand.capacity.Cluster.Labels[sc.TopologyKey]
		if !ok {
			c.reject(d, cand.capacity.Name, structs.RejectSelector,
				fmt.Sprintf("has no %s label, the topologyKey the policy's percentageSplit divides over", sc.TopologyKey))
			continue
		}
		if _, listed := byValue[value]; !listed {
			c.reject(d, cand.capacity.Name, structs.RejectSelector,
				fmt.Sprintf("its %s label %q is not a topologyValue of the policy's percentageSplit", sc.TopologyKey, value))
			continue
		}
		byValue[value] = append(byValue[value], cand)
	}
	if wl.PodGroups[idx].Count == 0 {
		return c.divideNothing(wl, p, d, byValue)
	}
	shares := SplitReplicas(wl.PodGroups[idx].Count, percentages)
	replicas := map[string]int64{}
	var assignments []structs.Assignment
	// ranked says, per topology value, why the clusters of the value that fitted its share but ranked below the
	// chosen one were not used: they get no reason of their own.
	var ranked []string
	failed := ""
	for i, split := range sc.PercentageSplit {
		if shares[i] == 0 {
			continue
		}
		group := byValue[split.TopologyValue]
		if len(group) == 0 {
			if failed == "" {
				failed = fmt.Sprintf("no eligible cluster has %s=%s for its %d replicas", sc.TopologyKey, split.TopologyValue, shares[i])
			}
			continue
		}
		if kept := c.keptShare(wl, group, shares[i]); kept != nil {
			for cluster, n := range kept {
				replicas[cluster] += n
			}
			continue
		}
		pg := wl.PodGroups[idx]
		pg.Count = shares[i]
		g := &gang{items: []item{{group: &pg, count: pg.Count}}, demand: pg.Request.Scale(pg.Count)}
		prev := previousClusterIn(wl, group)
		best, owned, rank := c.choose(p, group, g, []*structs.Workload{wl}, prev, d)
		if best != nil {
			replicas[best.capacity.Name] += shares[i]
			for _, a := range owned {
				assignments = append(assignments, a.Assignment)
			}
			ranked = appendRanked(ranked, sc.TopologyKey, split.TopologyValue,
				c.rankedBelowMessage(p, best.capacity.Name, rank, best.capacity.Name == prev))
			continue
		}
		// No one cluster of the value fits the whole share: the value's clusters share it, as many
		// replicas on each as fit, the previous cluster first.
		spread, spreadAssignments := c.splitShare(wl, idx, group, shares[i])
		if spread == nil {
			if failed == "" {
				failed = fmt.Sprintf("the clusters with %s=%s do not fit its %d replicas, alone or together", sc.TopologyKey,
					split.TopologyValue, shares[i])
			}
			continue
		}
		for cluster, n := range spread {
			replicas[cluster] += n
			delete(d.Reasons, cluster)
			delete(d.RejectCodes, cluster)
		}
		assignments = append(assignments, spreadAssignments...)
	}
	if failed != "" {
		d.Message = failed
		return d
	}
	d.Status = structs.StatusPlaced
	d.Replicas = replicas
	d.Assignments = assignments
	d.Message = strings.Join(ranked, "; ")
	for cluster := range replicas {
		d.Clusters = append(d.Clusters, cluster)
	}
	slices.Sort(d.Clusters)
	return d
}

// keptShare returns the replicas a topology value's share keeps where they run: when the workload's current
// version already runs exactly that many on the value's clusters, which hold no reservation for it, they fit
// by definition, and packing them again would count them against themselves.
func (c *cycle) keptShare(wl *structs.Workload, group []candidate, share int64) map[string]int64 {
	if wl.Placement == nil {
		return nil
	}
	kept := map[string]int64{}
	var sum int64
	for _, cand := range group {
		name := cand.capacity.Name
		if !slices.Contains(wl.Placement.Clusters, name) {
			continue
		}
		if !c.runsAsIs(wl, name) {
			return nil
		}
		kept[name] = wl.Placement.Replicas[name]
		sum += kept[name]
	}
	if sum != share || len(kept) == 0 {
		return nil
	}
	return kept
}

// splitShare spreads a share of replicas over the clusters of one topology value, each taking as many as fit
// (found by bisection, since k replicas fitting means k-1 do), the previous cluster first, then by tier and
// name. It returns nil when even all of them together cannot take the share.
func (c *cycle) splitShare(wl *structs.Workload, idx int, group []candidate, share int64) (map[string]int64, []structs.Assignment) {
	order := slices.Clone(group)
	prev := previousClusterIn(wl, group)
	slices.SortStableFunc(order, func(a, b candidate) int {
		if (a.capacity.Name == prev) != (b.capacity.Name == prev) {
			if a.capacity.Name == prev {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.tier, b.tier), compareFavour(a, b), cmp.Compare(a.capacity.Name, b.capacity.Name))
	})
	owned := ownReservations(c.st, []*structs.Workload{wl})
	fitting := func(cand candidate, k int64) []ownedAssignment {
		pg := wl.PodGroups[idx]
		pg.Count = k
		g := &gang{items: []item{{group: &pg, count: k}}, demand: pg.Request.Scale(k), own: owned[cand.capacity.Name]}
		assignments, reason := c.fit(cand, g)
		if reason != "" {
			return nil
		}
		return assignments
	}
	out := map[string]int64{}
	var assignments []structs.Assignment
	left := share
	for _, cand := range order {
		if left == 0 {
			break
		}
		lo, hi := int64(0), left // lo replicas fit; find the most that do
		var best []ownedAssignment
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if a := fitting(cand, mid); a != nil {
				lo, best = mid, a
			} else {
				hi = mid - 1
			}
		}
		if lo == 0 {
			continue
		}
		out[cand.capacity.Name] = lo
		for _, a := range best {
			assignments = append(assignments, a.Assignment)
		}
		left -= lo
	}
	if left > 0 {
		return nil, nil
	}
	return out, assignments
}

// divideNothing places a workload scaled to zero replicas: the object still has to exist somewhere, as
// kubectl apply would create it, so that it can be scaled up. It goes with zero replicas to the cluster where
// it already is, else to the best eligible cluster of the first topology value that has one.
func (c *cycle) divideNothing(wl *structs.Workload, p *policy.Policy, d *structs.Decision, byValue map[string][]candidate) *structs.Decision {
	for _, split := range p.Spec.SpreadConstraints.PercentageSplit {
		group := byValue[split.TopologyValue]
		if len(group) == 0 {
			continue
		}
		pg := wl.PodGroups[divisibleGroup(wl)]
		pg.Count = 0
		g := &gang{items: []item{{group: &pg}}}
		prev := previousClusterIn(wl, group)
		best, _, rank := c.choose(p, group, g, []*structs.Workload{wl}, prev, d)
		if best == nil {
			continue
		}
		d.Status = structs.StatusPlaced
		d.Clusters = []string{best.capacity.Name}
		d.Replicas = map[string]int64{best.capacity.Name: 0}
		d.Message = "0 replicas go to one cluster, of the first topologyValue with one that fits"
		if msg := c.rankedBelowMessage(p, best.capacity.Name, rank, best.capacity.Name == prev); msg != "" {
			d.Message = strings.Join(appendRanked([]string{d.Message}, p.Spec.SpreadConstraints.TopologyKey, split.TopologyValue, msg), "; ")
		}
		return d
	}
	d.Message = fmt.Sprintf("no eligible cluster has a %s of the policy's percentageSplit", p.Spec.SpreadConstraints.TopologyKey)
	return d
}

// appendRanked adds a topology value's ranked-below message, naming the value, when there is one.
func appendRanked(ranked []string, key, value, msg string) []string {
	if msg == "" {
		return ranked
	}
	return append(ranked, key+"="+value+": "+msg)
}

// previousClusterIn returns the cluster of group the workload already had replicas on, for stickiness.
func previousClusterIn(wl *structs.Workload, group []candidate) string {
	if wl.Placement == nil {
		return ""
	}
	for _, cand := range group {
		if slices.Contains(wl.Placement.Clusters, cand.capacity.Name) {
			return cand.capacity.Name
		}
	}
	return ""
}
