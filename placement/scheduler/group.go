package scheduler

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// scheduleGroup places a workload whose policy groups workloads by a label: every workload governed by the same
// policy with the same label value goes to one cluster. When a member already runs on a cluster this workload
// may use, that is the group's cluster and the workload must fit there. Otherwise the cluster is chosen for the
// combined demand of every member that is unplaced or runs where the group can no longer stay (a cluster gone
// NotReady, relabelled or tainted, or one the workload must avoid), and all of them are placed at once, one
// decision each, so the group moves together.
func (c *cycle) scheduleGroup(wl *structs.Workload, p *policy.Policy) *structs.Plan {
	key := p.Spec.GroupBy.LabelKey
	value := wl.Labels[key]
	groupName := key + "=" + value
	var members []*structs.Workload
	var homes []string
	for _, m := range c.st.Workloads() {
		if m.Labels[key] != value {
			continue
		}
		if mp := c.policyFor(m); mp == nil || mp.Name != p.Name {
			continue
		}
		members = append(members, m)
		if h := stickyCluster(m); h != "" && m.ID != wl.ID {
			homes = append(homes, h)
		}
	}
	if h := stickyCluster(wl); h != "" {
		homes = append(homes, h)
	}

	probe := c.newDecision(wl, p)
	cands := c.filter(wl, p, probe)
	eligible := func(cluster string) bool {
		return slices.ContainsFunc(cands, func(cand candidate) bool { return cand.capacity.Name == cluster })
	}
	home := ""
	for _, h := range homes {
		// A cluster that turned this workload's kind away still holds the group: the workload waits for it
		// rather than splitting the group. Any other rejection concerns the cluster itself, and the group leaves.
		if eligible(h) || probe.RejectCodes[h] == structs.RejectAPI {
			home = h
			break
		}
	}

	if home != "" {
		d := probe
		var homeCands []candidate
		for _, cand := range cands {
			if cand.capacity.Name == home {
				homeCands = append(homeCands, cand)
			} else {
				c.reject(d, cand.capacity.Name, structs.RejectGroup, fmt.Sprintf("group %s is placed on %s", groupName, home))
			}
		}
		if len(homeCands) == 1 && c.runsAsIs(wl, home) {
			d.Status = structs.StatusPlaced
			d.Clusters = []string{home}
			return c.single(d)
		}
		best, owned, _ := c.choose(p, homeCands, newGang(c.rt, []*structs.Workload{wl}), []*structs.Workload{wl}, home, d)
		if best == nil {
			d.Status = structs.StatusUnschedulable
			d.Message = fmt.Sprintf("group %s is placed on %s, which cannot take this workload", groupName, home)
			return c.single(d)
		}
		d.Status = structs.StatusPlaced
		d.Clusters = []string{home}
		for _, a := range owned {
			d.Assignments = append(d.Assignments, a.Assignment)
		}
		return c.single(d)
	}

	var unplaced []*structs.Workload
	for _, m := range members {
		if h := stickyCluster(m); h == "" || !eligible(h) {
			unplaced = append(unplaced, m)
		}
	}
	// Every member must be able to run on the chosen cluster, not only the one that triggered the cycle.
	kept := cands[:0]
	for _, cand := range cands {
		ok := true
		for _, m := range unplaced {
			if key := structs.APIKey(m.APIVersion, m.Kind); !cand.capacity.Cluster.ServesAPI(key) {
				c.reject(probe, cand.capacity.Name, structs.RejectAPI, "does not serve "+key+" for "+m.DisplayName())
				ok = false
				break
			}
		}
		if ok {
			kept = append(kept, cand)
		}
	}
	best, owned, rank := c.choose(p, kept, newGang(c.rt, unplaced), unplaced, "", probe)
	ranked := ""
	if best != nil {
		ranked = c.rankedBelowMessage(p, best.capacity.Name, rank, false)
	}
	plan := &structs.Plan{}
	for i, m := range unplaced {
		d := c.newDecision(m, p)
		maps.Copy(d.Reasons, probe.Reasons)
		maps.Copy(d.RejectCodes, probe.RejectCodes)
		if best == nil {
			d.Status = structs.StatusUnschedulable
			d.Message = fmt.Sprintf("group %s (%d workloads) fits no cluster together", groupName, len(unplaced))
		} else {
			d.Status = structs.StatusPlaced
			d.Clusters = []string{best.capacity.Name}
			d.Message = ranked
			for _, a := range owned {
				if a.owner == i {
					d.Assignments = append(d.Assignments, a.Assignment)
				}
			}
		}
		if m.ID == wl.ID {
			plan.Decisions = append([]*structs.Decision{d}, plan.Decisions...)
		} else {
			plan.Decisions = append(plan.Decisions, d)
		}
	}
	return plan
}
