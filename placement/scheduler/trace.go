package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Check names one test the scheduler applies to a cluster for a workload.
type Check string

// Checks, in the order the scheduler applies them; the first that fails is the reason its decision gives.
const (
	// CheckSelector: the policy's clusterSelector, then its orderedClusterSelector tiers.
	CheckSelector Check = "Selector"
	CheckReady    Check = "Ready"
	// CheckAvoid: the workload's own list of clusters to leave (its pods pended or failed there).
	CheckAvoid           Check = "Avoid"
	CheckNoExecuteTaints Check = "NoExecuteTaints"
	// CheckAPI: the cluster serves the workload's kind.
	CheckAPI Check = "API"
	// CheckNoScheduleTaints also fails an invalid Cluster object, which keeps new workloads off as such a taint does.
	CheckNoScheduleTaints Check = "NoScheduleTaints"
	// CheckCapacity is the bound check: the gang against the summed free capacity, and each pod against the
	// largest free amount of any one node.
	CheckCapacity Check = "CapacityBound"
	// CheckNodeFit packs every pod of the gang onto the nodes at once.
	CheckNodeFit Check = "NodeFit"
)

// Outcome is the result of one check.
type Outcome string

// Outcomes.
const (
	OutcomePass Outcome = "PASS"
	OutcomeFail Outcome = "FAIL"
	// OutcomeSkip: the check does not apply (a policy that is not capacity-aware checks no capacity).
	OutcomeSkip Outcome = "SKIP"
)

// CheckResult is the outcome of one check of one cluster.
type CheckResult struct {
	Check   Check
	Outcome Outcome
	// Code classifies a failure as the decision does.
	Code structs.RejectCode
	// Detail is, for a failure, the reason the decision gives; otherwise what the check found, or why it was skipped.
	Detail string
}

// NodeShape is a node and what it has free.
type NodeShape struct {
	Node string
	Free structs.Vector
}

// ClusterTrace is every check of one cluster, none skipped because an earlier one failed.
type ClusterTrace struct {
	Cluster string
	Checks  []CheckResult
	// Passed: the cluster may take the workload; the selection among such clusters is the Trace's.
	Passed bool
	// Code and Reason are what the decision says of a cluster it rejects: the first failing check's.
	Code   structs.RejectCode
	Reason string
	Tier   int
	// Disfavoured: an untolerated PreferNoSchedule taint ranks the cluster after the others of its tier.
	Disfavoured bool
	// RunsAsIs: the workload's version already runs there and holds no reservation, so it fits by definition.
	RunsAsIs bool
	// Held: a Duplicate copy on a cluster that is not Ready, which the scheduler keeps rather than withdraws.
	Held bool
	// Score ranks the passing clusters of a capacity-aware single-cluster policy, lower first (Scored).
	Scored bool
	Score  int64
	// Pod is the pod group whose pod fit no node, and Closest the node allowed to run it that came closest
	// (the largest share of one pod free); both nil unless node fit failed, Closest nil when no node allows it.
	Pod     *structs.PodGroup
	Closest *NodeShape
}

// Mode is how a policy places a workload.
type Mode string

// Modes.
const (
	ModeSingle    Mode = "Single"
	ModeDuplicate Mode = "Duplicate"
	ModeDivide    Mode = "Divide"
	ModeGroup     Mode = "Group"
)

// Trace is how the scheduler judges every cluster for one workload on one view.
type Trace struct {
	WorkloadID string
	// Policy governs the workload, "" when none does (then there are no clusters to judge).
	Policy        string
	Mode          Mode
	CapacityAware bool
	Scoring       v1alpha1.ScoringStrategy
	// Dominant is the index of the resource scores compare, -1 when nothing is scored.
	Dominant int
	// Sticky is the cluster a single-cluster workload stays on while it fits there.
	Sticky string
	// Demand is the whole gang's.
	Demand   structs.Vector
	Clusters []ClusterTrace
	// Ranking lists the passing clusters, in the order the scheduler prefers them (Single), else by name.
	Ranking []string
	// Selected is where the scheduler places the workload: the first of Ranking (Single), all of it
	// (Duplicate); nil under Divide and Group, which decide per share and per group.
	Selected []string
}

// TraceClusters judges every cluster for a workload with the rules a cycle applies, running every check on
// every cluster instead of stopping at the first that fails, so an operator sees all that stands in the way.
// A cluster the cycle rejects fails here with the same code and reason; the clusters passed here and the
// selection are those the cycle chooses from. Two things it does not follow: a single-cluster workload that
// fits nowhere but on a cluster it must avoid goes back there (scheduleOneOrBack), and Divide and Group
// policies judge capacity per share and per group, so their capacity checks are skipped here.
func TraceClusters(st State, workloadID string) (*Trace, error) {
	wl := st.Workload(workloadID)
	if wl == nil {
		return nil, fmt.Errorf("scheduler: workload %s is not in the fleet view", workloadID)
	}
	c := &cycle{st: st, rt: st.Resources(), policies: st.Policies(), capacities: st.Capacities(), filters: &clusterFilters{}}
	t := &Trace{WorkloadID: wl.ID, Demand: wl.Demand, Dominant: -1}
	p := c.policyFor(wl)
	if p == nil {
		return t, nil
	}
	t.Policy, t.Mode, t.CapacityAware, t.Scoring = p.Name, modeOf(wl, p), p.CapacityAware(), p.Scoring()
	d := c.newDecision(wl, p)
	cands := c.filter(wl, p, d)
	held := map[string]bool{}
	if t.Mode == ModeDuplicate {
		for _, name := range c.heldCopies(wl, p, d) {
			held[name] = true
		}
	}
	if t.Mode == ModeSingle {
		t.Sticky = stickyOrKept(wl)
	}
	g := newGang(c.rt, []*structs.Workload{wl})
	sized := t.CapacityAware && (t.Mode == ModeSingle || t.Mode == ModeDuplicate)
	if sized && len(cands) > 0 {
		t.Dominant = c.dominant(cands, g.demand)
	}
	tr := &tracer{c: c, wl: wl, p: p, t: t, g: g, own: ownReservations(st, []*structs.Workload{wl}), sized: sized}
	var passed []candidate
	for _, cc := range c.capacities {
		i := slices.IndexFunc(cands, func(cand candidate) bool { return cand.capacity == cc })
		ct := tr.cluster(cc, i >= 0)
		if i < 0 {
			ct.Code, ct.Reason = d.RejectCodes[cc.Name], d.Reasons[cc.Name]
			ct.Held = held[cc.Name]
			ct.Passed = ct.Held
		}
		if ct.Passed {
			cand := candidate{capacity: cc, tier: ct.Tier, disfavoured: ct.Disfavoured, score: ct.Score}
			passed = append(passed, cand)
		}
		t.Clusters = append(t.Clusters, ct)
	}
	if t.Mode == ModeSingle {
		slices.SortFunc(passed, func(a, b candidate) int {
			if !t.CapacityAware {
				return compareByOrderSticky(a, b, t.Sticky)
			}
			if ranksBefore(&a, &b, t.Sticky) {
				return -1
			}
			return 1
		})
	}
	for _, cand := range passed {
		t.Ranking = append(t.Ranking, cand.capacity.Name)
	}
	switch {
	case t.Mode == ModeSingle && len(t.Ranking) > 0:
		t.Selected = t.Ranking[:1]
	case t.Mode == ModeDuplicate:
		t.Selected = t.Ranking
	}
	return t, nil
}

// compareByOrderSticky is how choose orders the candidates of a policy that is not capacity-aware: the sticky
// cluster, then compareByOrder.
func compareByOrderSticky(a, b candidate, sticky string) int {
	if (a.capacity.Name == sticky) != (b.capacity.Name == sticky) {
		if a.capacity.Name == sticky {
			return -1
		}
		return 1
	}
	return compareByOrder(a, b)
}

func modeOf(wl *structs.Workload, p *policy.Policy) Mode {
	switch {
	case p.Spec.GroupBy != nil && wl.Labels[p.Spec.GroupBy.LabelKey] != "":
		return ModeGroup
	case p.Spec.SpreadConstraints != nil && p.Spec.SpreadConstraints.SpreadMode == v1alpha1.SpreadModeDuplicate:
		return ModeDuplicate
	case p.Spec.SpreadConstraints != nil && p.Spec.SpreadConstraints.SpreadMode == v1alpha1.SpreadModeDivide:
		return ModeDivide
	default:
		return ModeSingle
	}
}

// tracer judges one cluster after another for one workload.
type tracer struct {
	c     *cycle
	wl    *structs.Workload
	p     *policy.Policy
	t     *Trace
	g     *gang
	own   map[string]map[string]structs.Vector
	sized bool
}

// cluster runs every check on one cluster; kept says whether the cycle's filter kept it.
func (tr *tracer) cluster(cc *structs.ClusterCapacity, kept bool) ClusterTrace {
	cl := cc.Cluster
	ct := ClusterTrace{Cluster: cc.Name}
	add := func(check Check, rej *rejection, passDetail string) {
		if rej != nil {
			ct.Checks = append(ct.Checks, CheckResult{Check: check, Outcome: OutcomeFail, Code: rej.code, Detail: rej.reason})
			return
		}
		ct.Checks = append(ct.Checks, CheckResult{Check: check, Outcome: OutcomePass, Detail: passDetail})
	}
	tier, rej := selectorRejection(tr.p, cl)
	ct.Tier = tier
	selected := "matches the clusterSelector"
	if tr.p.Tiers() > 1 && rej == nil {
		selected += ", tier " + strconv.Itoa(tier)
	}
	add(CheckSelector, rej, selected)
	add(CheckReady, readyRejection(cl), "is Ready")
	if why, avoided := tr.wl.Avoid[cc.Name]; avoided {
		add(CheckAvoid, &rejection{structs.RejectAvoided, why}, "")
	} else {
		add(CheckAvoid, nil, "not avoided")
	}
	add(CheckNoExecuteTaints, taintRejection(tr.p, cl, corev1.TaintEffectNoExecute), "none untolerated")
	add(CheckAPI, apiRejection(structs.APIKey(tr.wl.APIVersion, tr.wl.Kind), cl), "serves "+structs.APIKey(tr.wl.APIVersion, tr.wl.Kind))
	// The same order as judgeCluster: an invalid cluster, then an untolerated NoSchedule taint.
	rej = invalidRejection(cl)
	if rej == nil {
		rej = taintRejection(tr.p, cl, corev1.TaintEffectNoSchedule)
	}
	passDetail := "none untolerated"
	if t := untoleratedTaintOf(cl.Taints, tr.p.Tolerations(), corev1.TaintEffectPreferNoSchedule); t != nil {
		ct.Disfavoured = true
		passDetail += "; untolerated " + taintString(t.Key, t.Value, string(t.Effect)) + " ranks it last in its tier"
	}
	if rej != nil && slices.Contains(tr.wl.RunsOn(), cc.Name) {
		// It only keeps new workloads off: one that runs there stays, as filter lets it.
		passDetail, rej = rej.reason+"; the workload already runs there, so it stays", nil
	}
	add(CheckNoScheduleTaints, rej, passDetail)
	tr.capacity(&ct, cc, kept)
	return ct
}

// capacity runs the bound check and the node fit on one cluster, as choose and scheduleDuplicate do, and
// scores it when it passes.
func (tr *tracer) capacity(ct *ClusterTrace, cc *structs.ClusterCapacity, kept bool) {
	skip := func(why string) {
		ct.Checks = append(ct.Checks, CheckResult{Check: CheckCapacity, Outcome: OutcomeSkip, Detail: why},
			CheckResult{Check: CheckNodeFit, Outcome: OutcomeSkip, Detail: why})
		ct.Passed = kept
	}
	switch {
	case !tr.t.CapacityAware:
		skip("capacityAware is false: order alone decides")
		return
	case tr.t.Mode == ModeDivide:
		skip("Divide fits each share of the replicas on its own; the decision names where each went")
		return
	case tr.t.Mode == ModeGroup:
		skip("groupBy fits the group's members together; the decision names where the group went")
		return
	}
	c, g := tr.c, tr.g
	// scheduleOne takes the sticky cluster as is only when it is a candidate; scheduleDuplicate any candidate.
	asIs := c.runsAsIs(tr.wl, cc.Name) && (tr.t.Mode == ModeDuplicate || cc.Name == tr.t.Sticky)
	if asIs && kept {
		ct.RunsAsIs = true
		why := "this version runs there already; its pods count in the cluster's requested capacity"
		ct.Checks = append(ct.Checks, CheckResult{Check: CheckCapacity, Outcome: OutcomePass, Detail: why},
			CheckResult{Check: CheckNodeFit, Outcome: OutcomePass, Detail: why})
	} else {
		g.own = tr.own[cc.Name]
		bound := c.boundCheck(cc, g)
		if bound != "" {
			ct.Checks = append(ct.Checks, CheckResult{Check: CheckCapacity, Outcome: OutcomeFail,
				Code: structs.RejectCapacity, Detail: bound})
		} else {
			ct.Checks = append(ct.Checks, CheckResult{Check: CheckCapacity, Outcome: OutcomePass, Detail: tr.sums(cc)})
		}
		pk := c.packerFor(candidate{capacity: cc}, g)
		assignments, packReason := pk.pack()
		if packReason != "" {
			ct.Checks = append(ct.Checks, CheckResult{Check: CheckNodeFit, Outcome: OutcomeFail,
				Code: structs.RejectCapacity, Detail: packReason})
			if pk.failed != nil {
				ct.Pod, ct.Closest = pk.failed, pk.closest(pk.failed)
			}
		} else {
			ct.Checks = append(ct.Checks, CheckResult{Check: CheckNodeFit, Outcome: OutcomePass,
				Detail: packedOn(assignments)})
		}
		if reason := cmp.Or(bound, packReason); reason != "" {
			if kept {
				ct.Code, ct.Reason = structs.RejectCapacity, reason
			}
			return
		}
	}
	ct.Passed = kept
	if kept && tr.t.Mode == ModeSingle {
		ct.Scored, ct.Score = true, scoreOf(cc, g, tr.t.Dominant, tr.t.Scoring == v1alpha1.ScoringSpread)
	}
}

// sums says what the gang needs in total and what the cluster has free of it, counting the workload's own
// reservations there as free, as the bound check does.
func (tr *tracer) sums(cc *structs.ClusterCapacity) string {
	var free structs.Vector
	for _, v := range tr.g.own {
		free = free.Add(v)
	}
	free = free.Add(cc.Free)
	masked := make(structs.Vector, len(tr.g.demand))
	for i, want := range tr.g.demand {
		if want > 0 {
			masked[i] = max(free.Get(i), 0)
		}
	}
	return "needs " + tr.c.rt.Format(tr.g.demand) + " in total; free " + tr.c.rt.Format(masked)
}

// packedOn says how many pods went on how many nodes.
func packedOn(assignments []ownedAssignment) string {
	nodes := map[string]bool{}
	var pods int64
	for _, a := range assignments {
		nodes[a.Node] = true
		pods += a.Pods
	}
	return fmt.Sprintf("packs %d pods on %d nodes", pods, len(nodes))
}

// closest returns the node allowed to run pods of g that has the largest share of one pod's request free, as
// packing left it (ties to the larger sum of shares, then the first by name); nil when no node allows g. It is
// the node shape an operator compares with what one pod needs.
func (p *packer) closest(g *structs.PodGroup) *NodeShape {
	key := memoKey(g)
	var best *NodeShape
	bestMin, bestSum := -1.0, -1.0
	for ci, ch := range p.c.Chunks {
		el := eligibilityOf(ch, g, key)
		if el.count == 0 {
			continue
		}
		for j, nc := range ch.Nodes {
			if !el.mask[j] {
				continue
			}
			plus, minus := p.adjust(nodeKey{ci, j}, nc.Node.Name)
			free := make(structs.Vector, max(len(nc.Free), len(g.Request)))
			for r := range free {
				free[r] = max(0, nc.Free.Get(r)+plus.Get(r)-minus.Get(r))
			}
			least, sum := 1.0, 0.0
			for r, want := range g.Request {
				if want > 0 {
					share := min(1, float64(free[r])/float64(want))
					least, sum = min(least, share), sum+share
				}
			}
			if least > bestMin || (least == bestMin && sum > bestSum) {
				best, bestMin, bestSum = &NodeShape{Node: nc.Node.Name, Free: free}, least, sum
			}
		}
	}
	return best
}
