package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// maxPlanAttempts bounds how often a plan is recomputed after the Planner finds it stale.
const maxPlanAttempts = 5

// Scheduler places workloads. It holds no fleet state of its own, so one Scheduler serves any number of cycles;
// it only remembers what it derived from immutable fleet objects (see clusterFilters).
type Scheduler struct {
	logger  *slog.Logger
	filters clusterFilters
	// fitMode is how a gang is found to fit a cluster (FitNodes unless WithFit says otherwise).
	fitMode FitMode
}

// New returns a Scheduler that logs to logger (slog.Default when nil).
func New(logger *slog.Logger) *Scheduler {
	if logger == nil {
		logger = slog.Default()
	}
	return &Scheduler{logger: logger.With("component", "scheduler"), fitMode: FitNodes}
}

// Process runs a cycle for a workload and submits the plan, planning again on the refreshed view when the
// Planner finds the plan stale. It returns the submitted plan and the view to use next.
func (s *Scheduler) Process(st State, planner Planner, workloadID string) (*structs.Plan, State, error) {
	var lastErr error
	for range maxPlanAttempts {
		plan, err := s.Schedule(st, workloadID)
		if err != nil {
			return nil, st, err
		}
		next, err := planner.SubmitPlan(plan)
		if next != nil {
			st = next
		}
		if err == nil {
			return plan, st, nil
		}
		if !errors.Is(err, state.ErrStalePlan) {
			return nil, st, fmt.Errorf("scheduler: submit plan for %s: %w", workloadID, err)
		}
		s.logger.Debug("plan was stale, planning again", "workload", workloadID, "error", err)
		lastErr = err
	}
	return nil, st, fmt.Errorf("scheduler: plan for %s still stale after %d attempts: %w", workloadID, maxPlanAttempts, lastErr)
}

// Schedule runs one cycle for a workload and returns its plan without submitting it: one decision, or one per
// unplaced member when the workload's policy groups workloads.
func (s *Scheduler) Schedule(st State, workloadID string) (*structs.Plan, error) {
	wl := st.Workload(workloadID)
	if wl == nil {
		return nil, fmt.Errorf("scheduler: workload %s is not in the fleet view", workloadID)
	}
	c := &cycle{st: st, rt: st.Resources(), policies: st.Policies(), capacities: st.Capacities(), filters: &s.filters,
		fitMode: s.fitMode}
	p := c.policyFor(wl)
	if p == nil {
		d := c.newDecision(wl, nil)
		d.Status = structs.StatusNoPolicy
		d.Message = "no SchedulePolicy selects this workload"
		return &structs.Plan{Decisions: []*structs.Decision{d}}, nil
	}
	var plan *structs.Plan
	switch {
	case p.Spec.GroupBy != nil && wl.Labels[p.Spec.GroupBy.LabelKey] != "":
		plan = c.scheduleGroup(wl, p)
	case p.Spec.SpreadConstraints != nil && p.Spec.SpreadConstraints.SpreadMode == v1alpha1.SpreadModeDuplicate:
		plan = c.single(c.scheduleDuplicate(wl, p))
	case p.Spec.SpreadConstraints != nil && p.Spec.SpreadConstraints.SpreadMode == v1alpha1.SpreadModeDivide:
		plan = c.single(c.scheduleDivide(wl, p))
	default:
		plan = c.single(c.scheduleOneOrBack(wl, p))
	}
	if s.logger.Enabled(context.Background(), slog.LevelDebug) {
		for _, d := range plan.Decisions {
			s.logger.Debug("decision", "workload", d.Workload, "policy", d.Policy, "status", d.Status,
				"clusters", d.Clusters, "snapshot_index", d.SnapshotIndex, "decision_id", d.ID)
		}
	}
	return plan, nil
}

// cycle holds what one Schedule call reads, fetched once.
type cycle struct {
	st         State
	rt         *structs.ResourceTable
	policies   []*policy.Policy
	capacities []*structs.ClusterCapacity
	// totalReasons are the texts totalReason wrote this cycle.
	totalReasons []totalReason
	filters      *clusterFilters
	fitMode      FitMode
	// ofKind caches, by "group/kind/namespace" ("group/kind//" for every namespace), the workloads of a kind in a
	// namespace and their pod labels (cycle.domainsHeld), so the candidate clusters of one cycle read and hash them
	// once.
	ofKind map[string][]kindMember
}

func (c *cycle) single(d *structs.Decision) *structs.Plan {
	return &structs.Plan{Decisions: []*structs.Decision{d}}
}

func (c *cycle) policyFor(wl *structs.Workload) *policy.Policy {
	return policyAmong(c.st, c.policies, wl)
}

// PolicyFor returns the policy that governs a workload, nil when none selects it: of the policies that select
// its kind, labels and namespace, the best (policy.Best).
func PolicyFor(st State, wl *structs.Workload) *policy.Policy {
	return policyAmong(st, st.Policies(), wl)
}

func policyAmong(st State, policies []*policy.Policy, wl *structs.Workload) *policy.Policy {
	var nsLabels map[string]string
	if ns := st.Namespace(wl.Namespace); ns != nil {
		nsLabels = ns.Labels
	}
	var matching []*policy.Policy
	for _, p := range policies {
		if p.SelectsWorkload(wl.Group, wl.Kind, wl.Labels, nsLabels) {
			matching = append(matching, p)
		}
	}
	return policy.Best(matching)
}

func (c *cycle) newDecision(wl *structs.Workload, p *policy.Policy) *structs.Decision {
	d := &structs.Decision{
		ID:            structs.DecisionID(wl.ID, wl.Generation, c.st.Index()),
		WorkloadID:    wl.ID,
		Workload:      wl.DisplayName(),
		Generation:    wl.Generation,
		SnapshotIndex: c.st.Index(),
		Previous:      wl.Placement,
		Reasons:       map[string]string{},
		RejectCodes:   map[string]structs.RejectCode{},
	}
	if p != nil {
		d.Policy = p.Name
		d.Pin = p.Spec.PinPods && wl.Pinnable()
	}
	return d
}

func (c *cycle) reject(d *structs.Decision, cluster string, code structs.RejectCode, reason string) {
	d.Reasons[cluster] = reason
	d.RejectCodes[cluster] = code
}

// growReasons makes room in the decision's reason maps for n more rejections at once: a cycle that spills past a
// full tier rejects all of its clusters, and growing the maps cluster by cluster would rehash them several times.
func (c *cycle) growReasons(d *structs.Decision, n int) {
	if n < 8 {
		return
	}
	reasons := make(map[string]string, len(d.Reasons)+n)
	maps.Copy(reasons, d.Reasons)
	codes := make(map[string]structs.RejectCode, len(d.RejectCodes)+n)
	maps.Copy(codes, d.RejectCodes)
	d.Reasons, d.RejectCodes = reasons, codes
}

// candidate is a cluster that passed the filters that do not depend on capacity.
type candidate struct {
	capacity *structs.ClusterCapacity
	tier     int
	// disfavoured: the cluster has a PreferNoSchedule taint the policy does not tolerate, so it ranks after
	// the clusters of its tier that have none, as kube-scheduler ranks such nodes.
	disfavoured bool
	score       int64
}

// filter applies the policy's cluster selector and tiers, readiness, cluster taints and the installed API to
// every cluster, recording a reason for each it rejects. What it decides for a cluster depends only on the policy,
// the workload's kind and the cluster object, except for the workload's own list of clusters to avoid, so the
// rest is remembered across cycles (clusterFilters) and a cycle only walks the clusters.
func (c *cycle) filter(wl *structs.Workload, p *policy.Policy, d *structs.Decision) []candidate {
	verdicts := c.filters.get(p, structs.APIKey(wl.APIVersion, wl.Kind), c.capacities)
	out := make([]candidate, 0, len(c.capacities))
	for i, cc := range c.capacities {
		v := &verdicts[i]
		name := cc.Cluster.Name
		if v.before != nil {
			c.reject(d, name, v.before.code, v.before.reason)
			continue
		}
		if why, avoided := wl.Avoid[name]; avoided {
			c.reject(d, name, structs.RejectAvoided, why)
			continue
		}
		if v.after != nil && !staysOn(v, wl, name) {
			c.reject(d, name, v.after.code, v.after.reason)
			continue
		}
		out = append(out, candidate{capacity: cc, tier: v.tier, disfavoured: v.disfavoured})
	}
	return out
}

// staysOn reports whether a workload already on the cluster stays despite the verdict's rejection: placed there,
// or placed nowhere for a while with its copy kept running there (Kept).
func staysOn(v *clusterVerdict, wl *structs.Workload, cluster string) bool {
	return v.staysOn && slices.Contains(wl.RunsOn(), cluster)
}

// clusterVerdict is what filter decides for one cluster regardless of the workload's clusters to avoid: a
// rejection that comes before the avoid check (selector, tier, readiness), one that comes after it (taint,
// installed API), or the cluster's tier.
type clusterVerdict struct {
	before, after *rejection
	// staysOn is set when after only keeps new workloads off the cluster (an untolerated NoSchedule taint, and
	// no NoExecute one): a workload already there stays, as Kubernetes leaves running pods on a node tainted
	// NoSchedule and Karmada leaves resources on a cluster tainted so.
	staysOn     bool
	tier        int
	disfavoured bool
}

type rejection struct {
	code   structs.RejectCode
	reason string
}

// judgeCluster decides for one cluster what filter decides regardless of the workload's clusters to avoid. Each
// step is a function of its own so that TraceClusters can run every one of them without stopping at the first
// that fails, and still apply the very rules filter does.
func judgeCluster(p *policy.Policy, apiKey string, cl *structs.Cluster) clusterVerdict {
	tier, rej := selectorRejection(p, cl)
	if rej != nil {
		return clusterVerdict{before: rej}
	}
	if rej := readyRejection(cl); rej != nil {
		return clusterVerdict{before: rej}
	}
	if rej := taintRejection(p, cl, corev1.TaintEffectNoExecute); rej != nil {
		return clusterVerdict{after: rej}
	}
	if rej := apiRejection(apiKey, cl); rej != nil {
		return clusterVerdict{after: rej}
	}
	disfavoured := untoleratedTaintOf(cl.Taints, p.Tolerations(), corev1.TaintEffectPreferNoSchedule) != nil
	if rej := invalidRejection(cl); rej != nil {
		return clusterVerdict{after: rej, staysOn: true, tier: tier, disfavoured: disfavoured}
	}
	if rej := taintRejection(p, cl, corev1.TaintEffectNoSchedule); rej != nil {
		return clusterVerdict{after: rej, staysOn: true, tier: tier, disfavoured: disfavoured}
	}
	return clusterVerdict{tier: tier, disfavoured: disfavoured}
}

// selectorRejection applies the policy's clusterSelector, then its tiers; it returns the cluster's tier.
func selectorRejection(p *policy.Policy, cl *structs.Cluster) (int, *rejection) {
	if !p.SelectsCluster(cl.Labels) {
		return -1, &rejection{structs.RejectSelector, "does not match the policy's clusterSelector"}
	}
	tier := p.Tier(cl.Labels)
	if tier < 0 {
		return -1, &rejection{structs.RejectSelector, "is in no tier of the policy's orderedClusterSelector"}
	}
	return tier, nil
}

func readyRejection(cl *structs.Cluster) *rejection {
	if cl.Ready {
		return nil
	}
	reason := "is not Ready"
	if cl.NotReady != "" {
		reason += ": " + cl.NotReady
	}
	return &rejection{structs.RejectNotReady, reason}
}

// taintRejection rejects a cluster with a taint of the given effect that the policy does not tolerate.
func taintRejection(p *policy.Policy, cl *structs.Cluster, effect corev1.TaintEffect) *rejection {
	t := untoleratedTaintOf(cl.Taints, p.Tolerations(), effect)
	if t == nil {
		return nil
	}
	return &rejection{structs.RejectTaint, "has taint " + taintString(t.Key, t.Value, string(t.Effect)) +
		" that the policy does not tolerate"}
}

func apiRejection(apiKey string, cl *structs.Cluster) *rejection {
	if cl.ServesAPI(apiKey) {
		return nil
	}
	return &rejection{structs.RejectAPI, "does not serve " + apiKey}
}

func invalidRejection(cl *structs.Cluster) *rejection {
	if cl.Invalid == "" {
		return nil
	}
	return &rejection{structs.RejectTaint, cl.Invalid}
}

// clusterFilters remembers, per policy and kind, the verdict of every cluster of the fleet. Policies and clusters
// are immutable objects, replaced on every change, so an entry holds as long as the policy is the same object and
// every capacity row still points at the same cluster object; get checks that, which costs a pass over pointers
// instead of label selectors, taints and API lookups per cluster. Entries are keyed by the policy's name, so a
// changed policy replaces its entries instead of leaving them behind: the memo holds one entry per (policy, kind)
// in use. It is safe for concurrent use.
type clusterFilters struct {
	mu      sync.Mutex
	entries map[clusterFilterKey]*clusterFilter
}

type clusterFilterKey struct {
	policy string
	apiKey string
}

type clusterFilter struct {
	policy   *policy.Policy
	clusters []*structs.Cluster
	verdicts []clusterVerdict
}

// maxClusterFilters bounds the entries (one per policy and kind in use, each a verdict per cluster); past it the
// memo starts over, which only costs recomputation.
const maxClusterFilters = 1024

// get returns the verdict for each capacity row, in order.
func (f *clusterFilters) get(p *policy.Policy, apiKey string, capacities []*structs.ClusterCapacity) []clusterVerdict {
	key := clusterFilterKey{policy: p.Name, apiKey: apiKey}
	f.mu.Lock()
	e := f.entries[key]
	f.mu.Unlock()
	if e != nil && e.policy != p {
		e = nil // the policy changed: every verdict may have
	}
	if e != nil && len(e.clusters) == len(capacities) {
		same := true
		for i, cc := range capacities {
			if e.clusters[i] != cc.Cluster {
				same = false
				break
			}
		}
		if same {
			return e.verdicts
		}
	}
	// A changed cluster (a heartbeat, a label) leaves the others' verdicts as they were.
	prev := e
	e = &clusterFilter{policy: p, clusters: make([]*structs.Cluster, len(capacities)),
		verdicts: make([]clusterVerdict, len(capacities))}
	for i, cc := range capacities {
		e.clusters[i] = cc.Cluster
		if prev != nil && i < len(prev.clusters) && prev.clusters[i] == cc.Cluster {
			e.verdicts[i] = prev.verdicts[i]
		} else {
			e.verdicts[i] = judgeCluster(p, apiKey, cc.Cluster)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, replaces := f.entries[key]; f.entries == nil || (!replaces && len(f.entries) >= maxClusterFilters) {
		f.entries = map[clusterFilterKey]*clusterFilter{}
	}
	f.entries[key] = e
	return e.verdicts
}

// newGang builds the gang of the given workloads, optionally overriding one pod group's count (Divide).
func newGang(rt *structs.ResourceTable, workloads []*structs.Workload) *gang {
	g := &gang{demand: make(structs.Vector, rt.Len())}
	for owner, wl := range workloads {
		units, held := gangUnits(owner, wl)
		g.units = append(g.units, units...)
		for i := range wl.PodGroups {
			pg := &wl.PodGroups[i]
			if pg.Count == 0 {
				continue
			}
			if count := pg.Count - heldBy(held, i); count > 0 {
				g.items = append(g.items, item{owner: owner, group: pg, count: count})
			}
			// A pod bound by spec.nodeName skips the scheduler, so a cordon does not keep it off its node either.
			g.cordonTolerant = g.cordonTolerant || toleratesCordon(pg.Tolerations) || pg.NodeName != ""
			g.demand.AddInPlace(pg.Request, pg.Count)
		}
	}
	return g
}

// heldBy is held[i], 0 past its end.
func heldBy(held []int64, i int) int64 {
	if i < len(held) {
		return held[i]
	}
	return 0
}

// fit tries to fit the gang on one candidate; it returns the assignments or the reason it does not fit.
func (c *cycle) fit(cand candidate, g *gang) ([]ownedAssignment, string) {
	if c.fitMode == FitSummed {
		return c.summedFit(cand, g)
	}
	if reason := c.boundCheck(cand.capacity, g); reason != "" {
		return nil, reason
	}
	return c.packerFor(cand, g).pack()
}

// packerFor returns a packer of the gang onto the candidate's nodes.
func (c *cycle) packerFor(cand candidate, g *gang) *packer {
	p := &packer{rt: c.rt, c: cand.capacity, g: g}
	if len(g.units) > 0 {
		p.held = c.domainsHeld(cand.capacity, g)
	}
	return p
}

// dominant is the resource the gang needs most of, relative to what the candidates have in total.
func (c *cycle) dominant(cands []candidate, demand structs.Vector) int {
	total := make(structs.Vector, c.rt.Len())
	for _, cand := range cands {
		total.AddInPlace(cand.capacity.Allocatable, 1)
	}
	best, bestShare := structs.ResourcePods, -1.0
	for i, want := range demand {
		if i == structs.ResourcePods || want == 0 || total.Get(i) == 0 {
			continue
		}
		if share := float64(want) / float64(total.Get(i)); share > bestShare {
			best, bestShare = i, share
		}
	}
	return best
}

// choose returns the best candidate of the first tier that has one that fits, and its assignments. Candidates
// are scored on their capacity summary first (the free dominant resource left after the gang), then packed in
// score order, so only the clusters that are tried pay for node-level packing. A cluster listed in sticky comes
// first: it keeps the workload while the workload still fits there.
func (c *cycle) choose(p *policy.Policy, cands []candidate, g *gang, owners []*structs.Workload, sticky string,
	d *structs.Decision) (*candidate, []ownedAssignment, ranking) {
	if !p.CapacityAware() {
		// Order alone decides: the sticky cluster, else the first tier, then name.
		if i := slices.IndexFunc(cands, func(cand candidate) bool { return cand.capacity.Name == sticky }); i >= 0 {
			return &cands[i], nil, ranking{below: len(cands) - 1}
		}
		if len(cands) == 0 {
			return nil, nil, ranking{}
		}
		best := slices.MinFunc(cands, compareByOrder)
		r := ranking{below: len(cands) - 1}
		if !best.disfavoured {
			for i := range cands {
				if cands[i].disfavoured && cands[i].tier == best.tier {
					r.disfavoured++
				}
			}
		}
		return &best, nil, r
	}
	dom := c.dominant(cands, g.demand)
	spread := p.Scoring() == v1alpha1.ScoringSpread
	own := ownReservations(c.st, owners)
	// Score on the capacity summary. A cluster whose free dominant resource is below the demand cannot fit and
	// is rejected with its bound reason right away; the others are packed best first until one fits, so a cycle
	// usually packs one cluster.
	boundRejected := func(cand *candidate) bool {
		return !g.cordonTolerant && cand.capacity.Free.Get(dom) < g.demand.Get(dom) && len(own[cand.capacity.Name]) == 0 &&
			cand.capacity.Name != sticky
	}
	rejects := 0
	for i := range cands {
		if boundRejected(&cands[i]) {
			rejects++
		}
	}
	c.growReasons(d, rejects)
	live := cands[:0]
	for _, cand := range cands {
		g.own = own[cand.capacity.Name]
		if boundRejected(&cand) {
			c.reject(d, cand.capacity.Name, structs.RejectCapacity, c.boundCheck(cand.capacity, g))
			continue
		}
		cand.score = scoreOf(cand.capacity, g, dom, spread)
		live = append(live, cand)
	}
	better := func(a, b *candidate) bool { return ranksBefore(a, b, sticky) }
	// Selection instead of a full sort: the first pick usually fits.
	tried := make([]bool, len(live))
	for n := range live {
		best := -1
		for i := range live {
			if !tried[i] && (best < 0 || better(&live[i], &live[best])) {
				best = i
			}
		}
		tried[best] = true
		cand := &live[best]
		g.own = own[cand.capacity.Name]
		assignments, reason := c.fit(*cand, g)
		if reason == "" {
			r := ranking{below: len(live) - n - 1, dominant: dom}
			for i := range live {
				if !tried[i] && live[i].disfavoured && !cand.disfavoured && live[i].tier == cand.tier {
					r.disfavoured++
				}
			}
			return cand, assignments, r
		}
		c.reject(d, cand.capacity.Name, structs.RejectCapacity, reason)
	}
	return nil, nil, ranking{}
}

// compareByOrder orders the candidates of a policy that is not capacity-aware: the earlier tier, no untolerated
// PreferNoSchedule taint, then the name.
func compareByOrder(a, b candidate) int {
	return cmp.Or(cmp.Compare(a.tier, b.tier), compareFavour(a, b), cmp.Compare(a.capacity.Name, b.capacity.Name))
}

// scoreOf is a candidate's score, lower ranking first: the free dominant resource the gang leaves (BinPack
// fills the fullest cluster), negated under Spread (which keeps the most free).
func scoreOf(cc *structs.ClusterCapacity, g *gang, dom int, spread bool) int64 {
	left := cc.Free.Get(dom) - g.demand.Get(dom)
	if spread {
		return -left
	}
	return left
}

// ranksBefore orders the candidates of a capacity-aware policy as choose tries them: the sticky cluster, then
// the earlier tier, no untolerated PreferNoSchedule taint, the better score, and the name.
func ranksBefore(a, b *candidate, sticky string) bool {
	stickyA, stickyB := a.capacity.Name == sticky, b.capacity.Name == sticky
	if stickyA != stickyB {
		return stickyA
	}
	return cmp.Or(cmp.Compare(a.tier, b.tier), compareFavour(*a, *b), cmp.Compare(a.score, b.score),
		cmp.Compare(a.capacity.Name, b.capacity.Name)) < 0
}

// ranking is what choose knows of the clusters it passed over without a reason: how many passed the filters
// and the bound check yet ranked below the chosen one, and the resource the ranking compared.
type ranking struct {
	below    int
	dominant int
	// disfavoured counts those of its tier that ranked below for an untolerated PreferNoSchedule taint.
	disfavoured int
}

// rankedBelowMessage explains a placement whose other candidates were not rejected but ranked lower, so a
// verdict says why those clusters were not used even though none of them failed a check.
func (c *cycle) rankedBelowMessage(p *policy.Policy, chosen string, r ranking, stayed bool) string {
	if r.below == 0 {
		return ""
	}
	others := "1 other cluster passed every check but ranks"
	if r.below > 1 {
		others = strconv.Itoa(r.below) + " other clusters passed every check but rank"
	}
	var rule string
	switch {
	case stayed:
		rule = "the workload already runs there"
	case !p.CapacityAware():
		rule = "capacityAware is false, so the earlier tier, then the name, decides"
	case p.Scoring() == v1alpha1.ScoringSpread:
		rule = "Spread prefers the most " + string(c.rt.Name(r.dominant)) + " left free"
	default:
		rule = "BinPack prefers the least " + string(c.rt.Name(r.dominant)) + " left free"
	}
	if p.Tiers() > 1 && !stayed && p.CapacityAware() {
		rule = "earlier tiers come first, then " + rule
	}
	if r.disfavoured > 0 && !stayed {
		rule += fmt.Sprintf("; %d of them with a PreferNoSchedule taint the policy does not tolerate, which ranks a cluster last", r.disfavoured)
	}
	return others + " below " + chosen + ": " + rule
}

// scheduleOne places a workload on one cluster.
func (c *cycle) scheduleOne(wl *structs.Workload, p *policy.Policy) *structs.Decision {
	d := c.newDecision(wl, p)
	cands := c.filter(wl, p, d)
	sticky := stickyOrKept(wl)
	if sticky != "" && c.runsAsIs(wl, sticky) &&
		slices.ContainsFunc(cands, func(cand candidate) bool { return cand.capacity.Name == sticky }) {
		d.Status = structs.StatusPlaced
		d.Clusters = []string{sticky}
		return d
	}
	g := newGang(c.rt, []*structs.Workload{wl})
	best, assignments, rank := c.choose(p, cands, g, []*structs.Workload{wl}, sticky, d)
	if best == nil {
		d.Status = structs.StatusUnschedulable
		if len(c.capacities) == 0 {
			d.Message = "the fleet has no clusters"
		}
		return d
	}
	d.Status = structs.StatusPlaced
	d.Clusters = []string{best.capacity.Name}
	for _, a := range assignments {
		d.Assignments = append(d.Assignments, a.Assignment)
	}
	d.Message = c.rankedBelowMessage(p, best.capacity.Name, rank, best.capacity.Name == sticky)
	return d
}

// scheduleOneOrBack is scheduleOne, falling back, when no cluster takes the workload and no Ready cluster runs
// it, to the clusters it was moved off earlier (Avoid) and no longer runs on: its pods pended there, it failed
// there, or its Apply was refused. Those keep it off while another cluster fits, or while it still runs on a
// Ready cluster (one relabelled away from its policy keeps it: it is not sent back where it could not run),
// but are no reason to leave it on a cluster that stopped answering: a job moved off a cluster whose pods
// pended for a while, then on a cluster that went NotReady (or left the fleet), would otherwise stay on the
// silent cluster for good though the first had room again. A cluster it is leaving now stays avoided.
func (c *cycle) scheduleOneOrBack(wl *structs.Workload, p *policy.Policy) *structs.Decision {
	d := c.scheduleOne(wl, p)
	if d.Status == structs.StatusPlaced || len(wl.Avoid) == 0 || c.runsOnAReadyCluster(wl, d) {
		return d
	}
	back := *wl
	back.Avoid = nil
	var earlier []string
	for cluster, why := range wl.Avoid {
		if wl.Placement != nil && slices.Contains(wl.Placement.Clusters, cluster) {
			if back.Avoid == nil {
				back.Avoid = map[string]string{}
			}
			back.Avoid[cluster] = why
			continue
		}
		if d.RejectCodes[cluster] == structs.RejectAvoided {
			earlier = append(earlier, cluster)
		}
	}
	if len(earlier) == 0 {
		return d
	}
	fallback := c.scheduleOne(&back, p)
	if fallback.Status != structs.StatusPlaced {
		return d
	}
	if why, ok := wl.Avoid[fallback.Clusters[0]]; ok {
		note := "no other cluster takes it, so it goes back to " + fallback.Clusters[0] + ", which it was moved off earlier: " + why
		fallback.Message = strings.TrimPrefix(fallback.Message+"; "+note, "; ")
	}
	return fallback
}

// runsOnAReadyCluster reports whether a cluster the workload is placed on (or, placed nowhere, still runs on:
// Kept) is in the fleet and was not rejected by d as NotReady.
func (c *cycle) runsOnAReadyCluster(wl *structs.Workload, d *structs.Decision) bool {
	for _, cluster := range wl.RunsOn() {
		if c.capacityOf(cluster) != nil && d.RejectCodes[cluster] != structs.RejectNotReady {
			return true
		}
	}
	return false
}

// capacityOf is the capacity row of the registered cluster name, nil when none is (State.Capacities sorts them
// by name).
func (c *cycle) capacityOf(name string) *structs.ClusterCapacity {
	i, found := slices.BinarySearchFunc(c.capacities, name, func(cc *structs.ClusterCapacity, name string) int {
		return strings.Compare(cc.Name, name)
	})
	if !found {
		return nil
	}
	return c.capacities[i]
}

// compareFavour orders a cluster without an untolerated PreferNoSchedule taint before one with it.
func compareFavour(a, b candidate) int {
	switch {
	case a.disfavoured == b.disfavoured:
		return 0
	case b.disfavoured:
		return -1
	default:
		return 1
	}
}

// runsAsIs reports whether the workload's current version already runs on cluster: placed there at its
// generation, with no reservation left there, because the cluster reported its pods. Those pods count in
// the cluster's requested capacity, so the workload fits there by definition, and packing it again would
// count its own pods against it.
func (c *cycle) runsAsIs(wl *structs.Workload, cluster string) bool {
	if wl.Placement == nil || wl.Placement.Generation != wl.Generation || !slices.Contains(wl.Placement.Clusters, cluster) {
		return false
	}
	for _, r := range c.st.ReservationsOf(wl.ID) {
		for _, n := range r.Nodes {
			if n.Cluster == cluster {
				return false
			}
		}
	}
	return true
}

// stickyOrKept is the cluster a single-cluster workload stays on while it fits there: the one it is placed on,
// or, placed nowhere for a while with its copy kept running on one cluster, that one.
func stickyOrKept(wl *structs.Workload) string {
	if sticky := stickyCluster(wl); sticky != "" || wl.Placement != nil || len(wl.Kept) != 1 {
		return sticky
	}
	return wl.Kept[0]
}

func stickyCluster(wl *structs.Workload) string {
	if wl.Placement != nil && len(wl.Placement.Clusters) == 1 && wl.Placement.Replicas == nil {
		return wl.Placement.Clusters[0]
	}
	return ""
}
