package explain_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/explain"
	pt "github.com/fleetflow/fleetflow/placement/placementtest"
)

var (
	prod = pt.Labels(map[string]string{"env": "prod"})
	// gpuNode holds one worker pod.
	gpuNode = pt.NodeSpec{Prefix: "gpu", Count: 2, Allocatable: pt.Res("cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8", "pods", "110")}
)

// trainingJob is two worker pods of 8 GPUs, 16 CPUs and 64Gi each.
func trainingJob() *pt.AnalysisBuilder {
	return pt.PyTorchJob("ml", "train").Component("worker", 2, pt.Res("cpu", "16", "memory", "64Gi", "nvidia.com/gpu", "8"))
}

// TestExplain explains one workload on a fleet of one cluster per case, and checks the cluster's result, the
// checks that fail (all of them, not only the first), and what the explanation says of policies and placement.
func TestExplain(t *testing.T) {
	cases := []struct {
		name      string
		cluster   []pt.ClusterOpt
		nodes     []pt.NodeSpec
		labels    map[string]string // the workload's
		place     bool
		want      string   // the cluster's result
		wantCode  string   // its code when it fails
		wantFails []string // every failing check, in order
		check     func(t *testing.T, e *explain.Explanation)
	}{
		{name: "placed", cluster: []pt.ClusterOpt{prod}, nodes: []pt.NodeSpec{gpuNode}, place: true, want: "PASS",
			check: func(t *testing.T, e *explain.Explanation) {
				c := e.Clusters[0]
				if !c.Selected || c.Rank != 1 || c.Score == nil {
					t.Errorf("cluster = %+v, want selected, rank 1, scored", c)
				}
				if e.Decision.Status != "Placed" || e.Placement == nil || e.Placement.Clusters[0] != "c" ||
					e.Placement.DecidedIndex == 0 || e.Placement.DecidedAt == "" {
					t.Errorf("decision %+v, placement %+v: want placed on c with its sequence and time", e.Decision, e.Placement)
				}
			}},
		{name: "selector", cluster: []pt.ClusterOpt{pt.Labels(map[string]string{"env": "dev"})},
			nodes: []pt.NodeSpec{gpuNode}, want: "FAIL", wantCode: "Selector", wantFails: []string{"Selector"}},
		{name: "taint", cluster: []pt.ClusterOpt{prod, pt.Taints(corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule})},
			nodes: []pt.NodeSpec{gpuNode}, want: "FAIL", wantCode: "Taint", wantFails: []string{"NoScheduleTaints"}},
		{name: "missing API", cluster: []pt.ClusterOpt{prod, pt.APIs("apps/v1/Deployment")},
			nodes: []pt.NodeSpec{gpuNode}, want: "FAIL", wantCode: "API", wantFails: []string{"API"}},
		{name: "not ready, tainted too", cluster: []pt.ClusterOpt{prod, pt.NotReady(),
			pt.Taints(corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectNoExecute})},
			nodes: []pt.NodeSpec{gpuNode}, want: "FAIL", wantCode: "NotReady", wantFails: []string{"Ready", "NoExecuteTaints"}},
		{name: "capacity bound", cluster: []pt.ClusterOpt{prod},
			nodes: []pt.NodeSpec{{Prefix: "gpu", Allocatable: pt.Res("cpu", "32", "memory", "256Gi", "nvidia.com/gpu", "8")}},
			want:  "FAIL", wantCode: "Capacity", wantFails: []string{"CapacityBound", "NodeFit"}},
		{name: "node fit: enough in total, no node big enough", cluster: []pt.ClusterOpt{prod},
			// 16 GPUs and 72 CPUs in all, as much as the largest pod needs of each on some node, but the GPU
			// nodes have 4 CPUs.
			nodes: []pt.NodeSpec{
				{Prefix: "a", Count: 2, Allocatable: pt.Res("cpu", "4", "memory", "64Gi", "nvidia.com/gpu", "8")},
				{Prefix: "b", Allocatable: pt.Res("cpu", "64", "memory", "256Gi")}},
			want: "FAIL", wantCode: "Capacity", wantFails: []string{"NodeFit"},
			check: func(t *testing.T, e *explain.Explanation) {
				c := e.Clusters[0]
				want := explain.NodeShape{Node: "a-0", Free: explain.Resources{"cpu": "4", "memory": "64Gi", "nvidia.com/gpu": "8"}}
				if c.LargestFreeNode == nil || c.LargestFreeNode.Node != want.Node || c.LargestFreeNode.Free.String() != want.Free.String() {
					t.Errorf("largest free node = %+v, want %+v", c.LargestFreeNode, want)
				}
				if c.PodComponent != "worker" || c.PodNeeds.String() != "cpu 16, memory 64Gi, nvidia.com/gpu 8" {
					t.Errorf("pod %s needs %s, want worker: cpu 16, memory 64Gi, nvidia.com/gpu 8", c.PodComponent, c.PodNeeds)
				}
			}},
		{name: "no policy matches", cluster: []pt.ClusterOpt{prod}, nodes: []pt.NodeSpec{gpuNode},
			labels: map[string]string{"team": "web"},
			check: func(t *testing.T, e *explain.Explanation) {
				if e.Policy != "" || len(e.Clusters) != 0 || e.Decision.Status != "NoPolicy" {
					t.Errorf("policy %q, %d clusters, decision %s: want none, none, NoPolicy", e.Policy, len(e.Clusters), e.Decision.Status)
				}
				if p := e.Policies[0]; p.Result != explain.PolicyNoMatch || !strings.Contains(p.Reason, "labelSelectors") {
					t.Errorf("policy %+v, want NOMATCH for its label selectors", p)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := pt.NewHarness(t)
			h.AddCluster("c", tc.cluster...)
			for _, n := range tc.nodes {
				h.AddNodes("c", n)
			}
			h.AddPolicy(pt.Policy("gpu", v1alpha1.SchedulePolicySpec{
				ResourceSelectors: v1alpha1.ResourceSelectors{LabelSelectors: []metav1.LabelSelector{
					{MatchLabels: map[string]string{"team": "ml"}}}},
				ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}))
			labels := tc.labels
			if labels == nil {
				labels = map[string]string{"team": "ml"}
			}
			id := h.AddWorkload(trainingJob().Obj(), labels)
			if tc.place {
				h.Place(id)
			}
			e, err := explain.Explain(h.Store.Snapshot(), id)
			if err != nil {
				t.Fatalf("explain: %v", err)
			}
			if tc.want != "" {
				c := e.Clusters[0]
				var fails []string
				for _, ch := range c.Checks {
					if ch.Result == "FAIL" {
						fails = append(fails, ch.Name)
					}
				}
				if c.Result != tc.want || c.Code != tc.wantCode || strings.Join(fails, ",") != strings.Join(tc.wantFails, ",") {
					t.Errorf("cluster %s %s (%s), failing checks %v; want %s (%s), %v\n%+v", c.Name, c.Result, c.Code, fails,
						tc.want, tc.wantCode, tc.wantFails, c)
				}
				if len(c.Checks) != 8 {
					t.Errorf("%d checks, want all 8", len(c.Checks))
				}
			}
			if tc.check != nil {
				tc.check(t, e)
			}
			assertRenders(t, e)
		})
	}
}

// assertRenders checks that the table names every failing check of every cluster on a line of its own, and
// that the JSON form reads back the same.
func assertRenders(t *testing.T, e *explain.Explanation) {
	t.Helper()
	var table bytes.Buffer
	if err := e.WriteTable(&table); err != nil {
		t.Fatalf("write table: %v", err)
	}
	for _, c := range e.Clusters {
		for _, ch := range c.Checks {
			found := false
			for line := range strings.Lines(table.String()) {
				f := strings.Fields(line)
				found = found || (len(f) >= 3 && f[0] == c.Name && f[1] == ch.Name && f[2] == ch.Result)
			}
			if !found {
				t.Errorf("table has no line %q %q %q:\n%s", c.Name, ch.Name, ch.Result, table.String())
			}
		}
	}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back explain.Explanation
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	again, _ := json.Marshal(&back)
	if !bytes.Equal(raw, again) {
		t.Errorf("JSON does not read back the same:\n%s\n%s", raw, again)
	}
}

// TestExplainUnknownWorkload: the error names the workload asked for.
func TestExplainUnknownWorkload(t *testing.T) {
	h := pt.NewHarness(t)
	snap := h.Store.Snapshot()
	if _, err := explain.Explain(snap, "kubeflow.org/PyTorchJob/ml/gone"); err == nil ||
		!strings.Contains(err.Error(), "kubeflow.org/PyTorchJob/ml/gone") {
		t.Errorf("Explain error = %v, want one naming the workload", err)
	}
	if _, err := explain.ResolveID(snap, "PyTorchJob/ml/gone"); err == nil || !strings.Contains(err.Error(), "PyTorchJob/ml/gone") {
		t.Errorf("ResolveID error = %v, want one naming the workload", err)
	}
}
