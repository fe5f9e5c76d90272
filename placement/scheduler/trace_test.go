package scheduler_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// TestTraceAgreesWithScheduleProperty builds random small fleets (labels, taints, readiness, installed APIs,
// tainted and cordoned nodes, several policies, workloads placed one after another, clusters changing and
// reservations expiring afterwards), then for every workload compares TraceClusters with the decision Schedule
// makes on the same snapshot: the same policy, every cluster the decision rejects fails in the trace with the
// same code and reason as its first failing check, and the trace selects the clusters the decision places on.
func TestTraceAgreesWithScheduleProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := placementtest.NewHarness(t)
		clusters := rapid.IntRange(1, 4).Draw(rt, "clusters")
		for c := range clusters {
			name := fmt.Sprintf("c%d", c)
			h.AddCluster(name, randomCluster(rt)...)
			for n := range rapid.IntRange(0, 3).Draw(rt, "nodes") {
				spec := placementtest.NodeSpec{Prefix: fmt.Sprintf("n%d", n),
					Allocatable: res("cpu", fmt.Sprint(rapid.IntRange(1, 16).Draw(rt, "cpu")), "memory", "64Gi",
						"nvidia.com/gpu", fmt.Sprint(rapid.IntRange(0, 8).Draw(rt, "gpu")), "pods", "8"),
					Requested:     res("cpu", fmt.Sprint(rapid.IntRange(0, 2).Draw(rt, "usedCPU"))),
					Unschedulable: rapid.IntRange(0, 5).Draw(rt, "cordoned") == 0}
				if rapid.Bool().Draw(rt, "gpuTaint") {
					spec.Taints = []corev1.Taint{{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
				}
				h.AddNodes(name, spec)
			}
		}
		for i := range rapid.IntRange(1, 2).Draw(rt, "policies") {
			h.AddPolicy(placementtest.Policy(fmt.Sprintf("p%d", i), randomPolicySpec(rt)))
		}
		var ids []string
		for w := range rapid.IntRange(1, 6).Draw(rt, "workloads") {
			b := placementtest.PyTorchJob("ns", fmt.Sprintf("job-%d", w))
			for comp := range rapid.IntRange(1, 2).Draw(rt, "components") {
				b.Component(fmt.Sprintf("c%d", comp), int64(rapid.IntRange(1, 4).Draw(rt, "pods")),
					res("cpu", fmt.Sprint(rapid.IntRange(0, 8).Draw(rt, "podCPU")),
						"nvidia.com/gpu", fmt.Sprint(rapid.IntRange(0, 4).Draw(rt, "podGPU"))))
				if rapid.Bool().Draw(rt, "tolerates") {
					b.Tolerate(corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists})
				}
			}
			labels := map[string]string{"team": rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "team")}
			id := h.AddWorkload(b.Obj(), labels)
			ids = append(ids, id)
			h.Place(id)
		}
		// What changes after the placements: a placed workload meets its cluster tainted, NotReady, or with its
		// reservation gone.
		if rapid.Bool().Draw(rt, "expire") {
			h.Now = h.Now.Add(time.Hour)
			if _, err := h.Store.ExpireReservations(h.NextSeq(), h.Now); err != nil {
				rt.Fatalf("expire: %v", err)
			}
		}
		if rapid.Bool().Draw(rt, "clusterChanges") {
			h.AddCluster(fmt.Sprintf("c%d", rapid.IntRange(0, clusters-1).Draw(rt, "changed")), randomCluster(rt)...)
		}

		snap := h.Store.Snapshot()
		for _, id := range ids {
			plan, err := h.Scheduler.Schedule(snap, id)
			if err != nil {
				rt.Fatalf("schedule %s: %v", id, err)
			}
			tr, err := scheduler.TraceClusters(snap, id)
			if err != nil {
				rt.Fatalf("trace %s: %v", id, err)
			}
			assertTraceAgrees(rt, plan.Decisions[0], tr)
		}
	})
}

func assertTraceAgrees(rt *rapid.T, d *structs.Decision, tr *scheduler.Trace) {
	if d.Policy != tr.Policy {
		rt.Fatalf("%s: decision's policy %q, trace's %q", d.Workload, d.Policy, tr.Policy)
	}
	byName := map[string]*scheduler.ClusterTrace{}
	for i := range tr.Clusters {
		ct := &tr.Clusters[i]
		byName[ct.Cluster] = ct
		first := slices.IndexFunc(ct.Checks, func(c scheduler.CheckResult) bool { return c.Outcome == scheduler.OutcomeFail })
		if ct.Code != "" && (first < 0 || ct.Checks[first].Code != ct.Code || ct.Checks[first].Detail != ct.Reason) {
			rt.Fatalf("%s on %s: rejected %s %q, but the first failing check is %d of %+v", d.Workload, ct.Cluster,
				ct.Code, ct.Reason, first, ct.Checks)
		}
	}
	for cluster, code := range d.RejectCodes {
		ct := byName[cluster]
		if ct == nil || ct.Passed || ct.Code != code || ct.Reason != d.Reasons[cluster] {
			rt.Fatalf("%s: decision rejects %s (%s: %s), trace says %+v", d.Workload, cluster, code, d.Reasons[cluster], ct)
		}
	}
	if tr.Mode != scheduler.ModeSingle && tr.Mode != scheduler.ModeDuplicate {
		return
	}
	var placed []string
	if d.Status == structs.StatusPlaced {
		placed = d.Clusters
	}
	if !slices.Equal(placed, tr.Selected) {
		rt.Fatalf("%s: decision %s on %v, trace selects %v (ranking %v; decision's reasons %v)", d.Workload, d.Status,
			d.Clusters, tr.Selected, tr.Ranking, d.Reasons)
	}
	// A cluster the decision neither rejects nor places on ranked below the chosen one, which the scheduler
	// never packed: the trace may only find it short of capacity.
	for _, ct := range tr.Clusters {
		if _, rejected := d.RejectCodes[ct.Cluster]; rejected || ct.Passed || slices.Contains(placed, ct.Cluster) {
			continue
		}
		if ct.Code != structs.RejectCapacity || len(placed) == 0 {
			rt.Fatalf("%s: trace fails %s (%s: %s), which the decision did not reject", d.Workload, ct.Cluster, ct.Code, ct.Reason)
		}
	}
}

func randomCluster(rt *rapid.T) []placementtest.ClusterOpt {
	opts := []placementtest.ClusterOpt{placementtest.Labels(map[string]string{
		"env": rapid.SampledFrom([]string{"prod", "dev"}).Draw(rt, "env")})}
	if rapid.IntRange(0, 4).Draw(rt, "notReady") == 0 {
		opts = append(opts, placementtest.NotReady())
	}
	if effect := rapid.SampledFrom([]corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute,
		corev1.TaintEffectPreferNoSchedule}).Draw(rt, "taint"); effect != "" {
		opts = append(opts, placementtest.Taints(corev1.Taint{Key: "maintenance", Effect: effect}))
	}
	if rapid.IntRange(0, 4).Draw(rt, "noAPI") == 0 {
		opts = append(opts, placementtest.APIs("apps/v1/Deployment"))
	}
	return opts
}

func randomPolicySpec(rt *rapid.T) v1alpha1.SchedulePolicySpec {
	spec := v1alpha1.SchedulePolicySpec{
		Priority: int32(rapid.IntRange(0, 2).Draw(rt, "priority")),
		Scoring:  rapid.SampledFrom([]v1alpha1.ScoringStrategy{v1alpha1.ScoringBinPack, v1alpha1.ScoringSpread}).Draw(rt, "scoring"),
	}
	if rapid.Bool().Draw(rt, "teamSelector") {
		spec.ResourceSelectors.LabelSelectors = []metav1.LabelSelector{{MatchLabels: map[string]string{
			"team": rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "policyTeam")}}}
	}
	switch rapid.IntRange(0, 2).Draw(rt, "clusterSelector") {
	case 1:
		spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	case 2:
		spec.OrderedClusterSelector = &v1alpha1.OrderedClusterSelector{Tiers: []metav1.LabelSelector{
			{MatchLabels: map[string]string{"env": "prod"}}, {MatchLabels: map[string]string{"env": "dev"}}}}
	}
	if rapid.Bool().Draw(rt, "toleratesMaintenance") {
		spec.Tolerations = []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists,
			Effect: rapid.SampledFrom([]corev1.TaintEffect{"", corev1.TaintEffectNoSchedule}).Draw(rt, "tolerationEffect")}}
	}
	if rapid.IntRange(0, 3).Draw(rt, "notCapacityAware") == 0 {
		spec.CapacityAware = new(false)
	}
	if rapid.IntRange(0, 2).Draw(rt, "duplicate") == 0 {
		spec.SpreadConstraints = &v1alpha1.SpreadConstraints{SpreadMode: v1alpha1.SpreadModeDuplicate}
	}
	return spec
}
