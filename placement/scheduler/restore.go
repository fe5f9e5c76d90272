package scheduler

import (
	"slices"

	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Repack packs a placed workload again on the clusters it is placed on, for a restarted placer to hold again
// the reservation its placement held: the placement it restores carries none, so until the clusters report its
// pods their room would count as free. On each cluster of the placement it packs the workload's gang (under
// Divide, its replicas there; under Duplicate, a full copy on each), with what its own pods there already
// request counted as room, as a cycle packs a placed workload (ownReservations). A cluster that reports as many
// of its pods as that, requesting as much, needs no reservation and is skipped, as is every cluster when its
// policy is not capacity-aware (such a policy reserves nothing). It changes nothing of where the workload is
// placed: it returns the assignments of the clusters where the pods fit, and why they do not fit on the others.
// Nothing is returned for a workload that is not placed.
func Repack(st State, workloadID string) ([]structs.Assignment, map[string]string) {
	wl := st.Workload(workloadID)
	if wl == nil || wl.Placement == nil {
		return nil, nil
	}
	c := &cycle{st: st, rt: st.Resources(), policies: st.Policies(), capacities: st.Capacities()}
	if i := slices.IndexFunc(c.policies, func(p *policy.Policy) bool { return p.Name == wl.Placement.Policy }); i >= 0 &&
		!c.policies[i].CapacityAware() {
		return nil, nil
	}
	divided := wl.Placement.Replicas != nil
	idx := divisibleGroup(wl)
	if divided && idx < 0 {
		return nil, nil
	}
	owned := ownReservations(st, []*structs.Workload{wl})
	label := structs.WorkloadLabelValue(wl.ID)
	var out []structs.Assignment
	var unfit map[string]string
	for _, cluster := range wl.Placement.Clusters {
		cc := c.capacityOf(cluster)
		if cc == nil || cc.Cluster == nil {
			continue
		}
		var g *gang
		if divided {
			n := wl.Placement.Replicas[cluster]
			if n <= 0 {
				continue
			}
			pg := wl.PodGroups[idx]
			pg.Count = n
			g = &gang{items: []item{{group: &pg, count: n}}, demand: pg.Request.Scale(n)}
		} else {
			g = newGang(c.rt, []*structs.Workload{wl})
		}
		if g.demand.Get(structs.ResourcePods) == 0 || runsAsPacked(cc, label, g.demand) {
			continue
		}
		g.own = owned[cluster]
		assignments, reason := c.fit(candidate{capacity: cc}, g)
		if reason != "" {
			if unfit == nil {
				unfit = map[string]string{}
			}
			unfit[cluster] = reason
			continue
		}
		for _, a := range assignments {
			out = append(out, a.Assignment)
		}
	}
	return out, unfit
}

// runsAsPacked reports whether a cluster reports as many pods of the workload of label as demand holds, which
// request at least the rest of demand: the pods take their room in the cluster's requested capacity already.
func runsAsPacked(cc *structs.ClusterCapacity, label string, demand structs.Vector) bool {
	var pods int64
	var requested structs.Vector
	for _, chunk := range cc.Chunks {
		for _, nc := range chunk.Nodes {
			if n := nc.Node.PodsByWorkload[label]; n > 0 {
				pods += n
				requested = requested.Add(nc.Node.RequestedByWorkload[label])
			}
		}
	}
	if pods < demand.Get(structs.ResourcePods) {
		return false
	}
	for i, want := range demand {
		if i != structs.ResourcePods && want > requested.Get(i) {
			return false
		}
	}
	return true
}
