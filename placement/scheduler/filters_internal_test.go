package scheduler

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// compiledPolicy compiles a policy named name that selects the clusters labelled pool=pool.
func compiledPolicy(t *testing.T, name, pool string) *policy.Policy {
	t.Helper()
	p, err := policy.Compile(&v1alpha1.SchedulePolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SchedulePolicySpec{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func capacityRows(pools ...string) []*structs.ClusterCapacity {
	rows := make([]*structs.ClusterCapacity, len(pools))
	for i, pool := range pools {
		rows[i] = &structs.ClusterCapacity{Name: fmt.Sprintf("c%d", i),
			Cluster: &structs.Cluster{Name: fmt.Sprintf("c%d", i), Labels: map[string]string{"pool": pool}, Ready: true}}
	}
	return rows
}

func selected(verdicts []clusterVerdict) []bool {
	out := make([]bool, len(verdicts))
	for i, v := range verdicts {
		out[i] = v.before == nil && v.after == nil
	}
	return out
}

// TestClusterFiltersFollowPolicyVersions: the memo answers for the policy object it is given, never for an
// earlier version of the same policy, and a policy replaced many times keeps one entry instead of one per
// version, so the memo never fills up with dead entries and starts over.
func TestClusterFiltersFollowPolicyVersions(t *testing.T) {
	var f clusterFilters
	rows := capacityRows("a", "b", "a")
	const api = "kubeflow.org/v1/PyTorchJob"

	v1 := compiledPolicy(t, "fill", "a")
	first := f.get(v1, api, rows)
	if got := selected(first); fmt.Sprint(got) != "[true false true]" {
		t.Fatalf("pool=a selects %v", got)
	}
	if again := f.get(v1, api, rows); &again[0] != &first[0] {
		t.Error("the same policy and clusters were judged again instead of remembered")
	}

	v2 := compiledPolicy(t, "fill", "b")
	if got := selected(f.get(v2, api, rows)); fmt.Sprint(got) != "[false true false]" {
		t.Fatalf("after the policy changed to pool=b, the memo says %v", got)
	}

	for i := range 3 * maxClusterFilters {
		f.get(compiledPolicy(t, "fill", []string{"a", "b"}[i%2]), api, rows)
	}
	if n := len(f.entries); n != 1 {
		t.Errorf("one policy replaced %d times left %d entries, want 1", 3*maxClusterFilters, n)
	}
	f.get(v1, "v1/Pod", rows)
	if n := len(f.entries); n != 2 {
		t.Errorf("a second kind makes %d entries, want 2", n)
	}
}
