package scenarios

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
)

// TestFillAndSpill: with tiers [cluster-a], [cluster-b], jobs go to cluster-a until it is full at node
// level, and the next one spills to cluster-b with a reason saying why cluster-a was passed over.
//
// Worked out from fleets/fill-and-spill.yaml: a job is a CPU-only master plus one worker asking for 3 of
// a node's 4 GPUs. Each cluster-a node takes one worker and keeps 1 GPU, so jobs 1-3 fill cluster-a's
// three nodes. Job 4 then meets 3 free GPUs on cluster-a, exactly its demand, so a count of the cluster's
// free GPUs would accept it; but no node has more than 1 free, so its worker fits no node, and it goes
// to the second tier.
func TestFillAndSpill(t *testing.T) {
	e := newScenario(t, "testdata/fleets/fill-and-spill.yaml", e2eenv.Options{
		PolicyFiles: []string{"testdata/policies/a-then-b.yaml"}})
	const ns = "fill"
	job := func(i int) string { return fmt.Sprintf("fill-%d", i) }
	master := Replicas{Count: 1, CPU: "1", Memory: "2Gi"}
	worker := Replicas{Count: 1, CPU: "4", Memory: "16Gi", GPUs: 3}

	// One at a time, each placed before the next is submitted, so "the next one" is well defined.
	for i := 1; i <= 3; i++ {
		submit(t, e, PyTorchJob(ns, job(i), master, worker))
		p := WaitPlacedOn(t, e, ns, job(i), "cluster-a")
		if p.Policy != "a-then-b" {
			t.Errorf("%s: policy annotation %q, want a-then-b", job(i), p.Policy)
		}
	}
	submit(t, e, PyTorchJob(ns, job(4), master, worker))
	p := WaitPlacedOn(t, e, ns, job(4), "cluster-b")

	// The reason is the node-level one: the largest free amount on any cluster-a node is the 1 GPU each
	// node kept. Which node is named first among the three equal ones is not part of the semantics.
	want := regexp.MustCompile(`^pod worker \(nvidia\.com/gpu 3\) fits no node: largest free 1 on gpu-[0-2]$`)
	if got := p.Reason("cluster-a"); !want.MatchString(got) {
		t.Errorf("%s: reason for cluster-a %q, want one matching %s (all reasons: %q)", job(4), got, want, p.Reasons)
	}
	for i := 1; i <= 3; i++ {
		if e2eenv.Get(t, e.Clusters["cluster-b"], PyTorchJobKind, ns, job(i)) != nil {
			t.Errorf("%s also landed on cluster-b", job(i))
		}
	}
	if e2eenv.Get(t, e.Clusters["cluster-a"], PyTorchJobKind, ns, job(4)) != nil {
		t.Errorf("%s also landed on cluster-a", job(4))
	}
}
