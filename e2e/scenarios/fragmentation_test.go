package scenarios

import (
	"regexp"
	"testing"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
)

// TestGPUFragmentation: a single pod asking for 8 GPUs lands on the cluster that has them on one node,
// not on the one with more free GPUs in total but scattered over many nodes.
//
// Worked out from fleets/fragmentation.yaml: cluster-a has 8 nodes with 2 free GPUs each (16 in total),
// cluster-b one node with 8 free. The policy scores Spread, which ranks by the dominant resource (GPUs)
// left free after the job: cluster-a 16-8 = 8, cluster-b 8-8 = 0. So cluster-a is the preferred
// cluster, and a placer that judged by cluster totals would put the job there. At node level the 8-GPU
// pod fits none of cluster-a's nodes (largest free: 2), so it must go to cluster-b, and cluster-a, having
// been tried first, carries the reason.
func TestGPUFragmentation(t *testing.T) {
	e := newScenario(t, "testdata/fleets/fragmentation.yaml", e2eenv.Options{
		PolicyFiles: []string{"testdata/policies/spread.yaml"}})
	const ns, name = "frag", "big-pod"
	// One pod: the master asks for the 8 GPUs, and there are no workers.
	submit(t, e, PyTorchJob(ns, name, Replicas{Count: 1, CPU: "8", Memory: "64Gi", GPUs: 8}, Replicas{Count: 0, CPU: "1", Memory: "1Gi"}))

	p := WaitPlacedOn(t, e, ns, name, "cluster-b")
	want := regexp.MustCompile(`^pod master \(nvidia\.com/gpu 8\) fits no node: largest free 2 on frag-[0-7]$`)
	if got := p.Reason("cluster-a"); !want.MatchString(got) {
		t.Errorf("reason for cluster-a %q, want one matching %s (all reasons: %q)", got, want, p.Reasons)
	}
	if p.Reason("cluster-b") != "" {
		t.Errorf("cluster-b, where the job runs, has a reason: %q", p.Reason("cluster-b"))
	}
	if e2eenv.Get(t, e.Clusters["cluster-a"], PyTorchJobKind, ns, name) != nil {
		t.Error("the job also landed on cluster-a")
	}
}
