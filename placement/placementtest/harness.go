package placementtest

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Harness is a real store, a scheduler and a recording StorePlanner, with a stream sequence counter and a
// clock the test controls.
type Harness struct {
	T         testing.TB
	Store     *state.Store
	Scheduler *scheduler.Scheduler
	Planner   *scheduler.StorePlanner
	Now       time.Time
	seq       uint64
}

// NewHarness returns a harness over an empty store.
func NewHarness(t testing.TB) *Harness {
	t.Helper()
	store, err := state.NewStore(state.Config{})
	if err != nil {
		t.Fatalf("new store: %v", err)
	}
	h := &Harness{T: t, Store: store, Scheduler: scheduler.New(nil), Now: time.Unix(1_700_000_000, 0)}
	h.Planner = &scheduler.StorePlanner{Store: store, NextSeq: h.NextSeq, Now: func() time.Time { return h.Now }}
	return h
}

// NextSeq returns the next stream sequence.
func (h *Harness) NextSeq() uint64 {
	h.seq++
	return h.seq
}

// ClusterOpt changes a cluster being added.
type ClusterOpt func(*structs.Cluster)

// Labels sets cluster labels.
func Labels(labels map[string]string) ClusterOpt {
	return func(c *structs.Cluster) { c.Labels = labels }
}

// NotReady marks the cluster not Ready.
func NotReady() ClusterOpt { return func(c *structs.Cluster) { c.Ready = false } }

// Taints sets cluster taints.
func Taints(taints ...corev1.Taint) ClusterOpt { return func(c *structs.Cluster) { c.Taints = taints } }

// APIs sets the installed kinds ("group/version/Kind").
func APIs(keys ...string) ClusterOpt {
	return func(c *structs.Cluster) {
		c.APIs = map[string]struct{}{}
		for _, k := range keys {
			c.APIs[k] = struct{}{}
		}
	}
}

// AddCluster adds a Ready cluster.
func (h *Harness) AddCluster(name string, opts ...ClusterOpt) {
	h.T.Helper()
	c := &structs.Cluster{Name: name, Ready: true}
	for _, o := range opts {
		o(c)
	}
	if err := h.Store.UpsertCluster(h.NextSeq(), c); err != nil {
		h.T.Fatalf("add cluster %s: %v", name, err)
	}
}

// NodeSpec describes count identical nodes named prefix-0 .. prefix-(count-1) (prefix alone when count is 1).
type NodeSpec struct {
	Prefix        string
	Count         int
	Labels        map[string]string
	Taints        []corev1.Taint
	Allocatable   corev1.ResourceList
	Requested     corev1.ResourceList
	Unschedulable bool
	// PodsByWorkload counts the pods of placed workloads running on each node, by structs.WorkloadLabelValue.
	PodsByWorkload map[string]int64
}

// AddNodes adds nodes to a cluster.
func (h *Harness) AddNodes(cluster string, spec NodeSpec) {
	h.T.Helper()
	var infos []structs.NodeInfo
	for i := range max(1, spec.Count) {
		name := spec.Prefix
		if spec.Count > 1 {
			name = fmt.Sprintf("%s-%d", spec.Prefix, i)
		}
		infos = append(infos, structs.NodeInfo{Cluster: cluster, Name: name, Labels: spec.Labels, Taints: spec.Taints,
			Unschedulable: spec.Unschedulable, Allocatable: spec.Allocatable, Requested: spec.Requested,
			PodsByWorkload: spec.PodsByWorkload})
	}
	if err := h.Store.UpsertNodes(h.NextSeq(), infos...); err != nil {
		h.T.Fatalf("add nodes to %s: %v", cluster, err)
	}
}

// AddPolicy compiles and adds a policy, failing the test when it is invalid.
func (h *Harness) AddPolicy(p *v1alpha1.SchedulePolicy) {
	h.T.Helper()
	compiled, err := policy.Compile(p, nil)
	if err != nil {
		h.T.Fatalf("compile policy: %v", err)
	}
	if err := h.Store.UpsertPolicy(h.NextSeq(), compiled); err != nil {
		h.T.Fatalf("add policy: %v", err)
	}
}

// AddNamespace adds a namespace with labels.
func (h *Harness) AddNamespace(name string, labels map[string]string) {
	h.T.Helper()
	if err := h.Store.UpsertNamespace(h.NextSeq(), &structs.Namespace{Name: name, Labels: labels}); err != nil {
		h.T.Fatalf("add namespace: %v", err)
	}
}

// AddWorkload adds a workload at generation 1 and returns its ID.
func (h *Harness) AddWorkload(a *karta.Analysis, labels map[string]string) string {
	h.T.Helper()
	wl, err := h.Store.UpsertWorkload(h.NextSeq(), structs.WorkloadInfo{Analysis: a, Labels: labels, Generation: 1})
	if err != nil {
		h.T.Fatalf("add workload: %v", err)
	}
	return wl.ID
}

// Place runs a cycle for a workload, submits the plan and returns the workload's decision.
func (h *Harness) Place(id string) *structs.Decision {
	h.T.Helper()
	plan, _, err := h.Scheduler.Process(h.Store.Snapshot(), h.Planner, id)
	if err != nil {
		h.T.Fatalf("process %s: %v", id, err)
	}
	return plan.Decisions[0]
}

// Policy builds a SchedulePolicy named name with spec.
func Policy(name string, spec v1alpha1.SchedulePolicySpec) *v1alpha1.SchedulePolicy {
	p := &v1alpha1.SchedulePolicy{Spec: spec}
	p.Name = name
	return p
}
