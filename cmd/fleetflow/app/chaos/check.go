package chaos

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/fleetflow/fleetflow/consumers/applier"
	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/schemas"
)

// Fleet is what the checks read: the control plane, each workload cluster, the streams, and the nodes a
// workload cluster's copies must fit on.
type Fleet struct {
	ControlPlane dynamic.Interface
	Clusters     map[string]dynamic.Interface
	JetStream    jetstream.JetStream
	// Nodes are each cluster's schedulable nodes.
	Nodes map[string][]Node
}

// Node is a schedulable node and the room it has for the run's workloads.
type Node struct {
	Name string
	// Free is its allocatable less what the pods it runs already request.
	Free   corev1.ResourceList
	Taints []corev1.Taint
}

// copyOf is a workload's copy on a workload cluster.
type copyOf struct {
	cluster string
	// decision is its decision-sequence annotation: which decision the applier carried out last.
	decision string
}

// observed is what the clusters hold of the run's workloads, by namespace/name.
type observed struct {
	controlPlane map[string]map[string]string // annotations
	copies       map[string][]copyOf
}

// check reads the clusters and, when they hold what they should, the streams, and returns every promise
// broken. An error means something could not be read (an apiserver down): not a verdict either way.
func check(ctx context.Context, f Fleet, workloads []*Workload) ([]string, error) {
	seen, err := observe(ctx, f)
	if err != nil {
		return nil, err
	}
	violations := checkClusters(seen, workloads)
	violations = append(violations, checkCapacity(f.Nodes, seen, workloads)...)
	if len(violations) > 0 {
		return violations, nil
	}
	h, err := readHistory(ctx, f.JetStream)
	if err != nil {
		return nil, err
	}
	return checkHistory(h, seen), nil
}

func key(namespace, name string) string { return namespace + "/" + name }

func observe(ctx context.Context, f Fleet) (observed, error) {
	seen := observed{controlPlane: map[string]map[string]string{}, copies: map[string][]copyOf{}}
	list, err := f.ControlPlane.Resource(PyTorchJobs).List(ctx, metav1.ListOptions{})
	if err != nil {
		return seen, fmt.Errorf("list PyTorchJobs on the control plane: %w", err)
	}
	for _, obj := range list.Items {
		seen.controlPlane[key(obj.GetNamespace(), obj.GetName())] = obj.GetAnnotations()
	}
	for cluster, client := range f.Clusters {
		list, err := client.Resource(PyTorchJobs).List(ctx, metav1.ListOptions{})
		if err != nil {
			return seen, fmt.Errorf("list PyTorchJobs on %s: %w", cluster, err)
		}
		for _, obj := range list.Items {
			k := key(obj.GetNamespace(), obj.GetName())
			seen.copies[k] = append(seen.copies[k], copyOf{cluster: cluster,
				decision: obj.GetAnnotations()[applier.AnnotationDecisionSequence]})
		}
	}
	return seen, nil
}

// checkClusters: every live workload is Placed with one copy, on its cluster, or Unschedulable with reasons
// and no copy; every deleted workload is gone, copies and all; no copy belongs to no workload.
func checkClusters(seen observed, workloads []*Workload) []string {
	var violations []string
	known := map[string]bool{}
	for _, w := range workloads {
		k := key(w.Namespace, w.Name)
		known[k] = true
		copies := clustersOf(seen.copies[k])
		annotations, onControlPlane := seen.controlPlane[k]
		switch {
		case w.Deleted && onControlPlane:
			violations = append(violations, k+": deleted, still on the control plane")
		case w.Deleted && len(copies) > 0:
			violations = append(violations, fmt.Sprintf("%s: deleted, copies left on %v", k, copies))
		case w.Deleted:
		case !onControlPlane:
			violations = append(violations, k+": submitted, missing from the control plane")
		default:
			violations = append(violations, checkVerdict(k, annotations, copies)...)
		}
	}
	for k, copies := range seen.copies {
		if !known[k] {
			violations = append(violations, fmt.Sprintf("%s: copies on %v of a workload the run never submitted", k, clustersOf(copies)))
		}
	}
	slices.Sort(violations)
	return violations
}

func checkVerdict(k string, annotations map[string]string, copies []string) []string {
	switch verdict := annotations[schemas.AnnotationPlacement]; verdict {
	case string(schemas.VerdictPlaced):
		if on := annotations[schemas.AnnotationCluster]; len(copies) != 1 || copies[0] != on {
			return []string{fmt.Sprintf("%s: Placed on %q, copies on %v", k, on, copies)}
		}
	case string(schemas.VerdictUnschedulable):
		if annotations[schemas.AnnotationReasons] == "" {
			return []string{k + ": Unschedulable with no reasons"}
		}
		if len(copies) > 0 {
			return []string{fmt.Sprintf("%s: Unschedulable, copies on %v", k, copies)}
		}
	default:
		return []string{fmt.Sprintf("%s: no verdict (placement %q)", k, verdict)}
	}
	return nil
}

func clustersOf(copies []copyOf) []string {
	var out []string
	for _, c := range copies {
		out = append(out, c.cluster)
	}
	slices.Sort(out)
	return out
}

// checkCapacity packs, per cluster, the pods of the workloads placed there onto its nodes, largest first:
// pods that fit no node mean the cluster was over-committed. Its packing is its own, not the placer's.
func checkCapacity(nodes map[string][]Node, seen observed, workloads []*Workload) []string {
	pods := map[string][]Pod{}
	for _, w := range workloads {
		copies := seen.copies[key(w.Namespace, w.Name)]
		if w.Deleted || len(copies) != 1 {
			continue // checkClusters names it
		}
		pods[copies[0].cluster] = append(pods[copies[0].cluster], w.Pods...)
	}
	var violations []string
	for cluster, ps := range pods {
		if left := pack(nodes[cluster], ps); left > 0 {
			violations = append(violations, fmt.Sprintf("cluster %s: %d of its %d pods fit on none of its %d nodes: over-committed",
				cluster, left, len(ps), len(nodes[cluster])))
		}
	}
	slices.Sort(violations)
	return violations
}

// pack places pods first-fit on nodes, largest first (GPUs, then CPU, then memory), and returns how many fit
// nowhere. The run's pods ask for 0, 4 or 8 GPUs, for which this order packs GPUs as well as any.
func pack(nodes []Node, pods []Pod) int {
	free := make([]corev1.ResourceList, len(nodes))
	for i, n := range nodes {
		free[i] = n.Free.DeepCopy()
	}
	sorted := slices.Clone(pods)
	slices.SortStableFunc(sorted, func(a, b Pod) int {
		for _, r := range []corev1.ResourceName{gpuResource, corev1.ResourceCPU, corev1.ResourceMemory} {
			qa, qb := a.Requests[r], b.Requests[r]
			if c := qb.Cmp(qa); c != 0 {
				return c
			}
		}
		return 0
	})
	left := 0
	for _, p := range sorted {
		i := -1
		for j, n := range nodes {
			if tolerates(p, n) && fits(p.Requests, free[j]) {
				i = j
				break
			}
		}
		if i < 0 {
			left++
			continue
		}
		for r, q := range p.Requests {
			f := free[i][r]
			f.Sub(q)
			free[i][r] = f
		}
		if pods, ok := free[i][corev1.ResourcePods]; ok {
			pods.Sub(resource.MustParse("1"))
			free[i][corev1.ResourcePods] = pods
		}
	}
	return left
}

// tolerates says whether p may go on n: GPU pods tolerate the GPU taint, and no pod tolerates another.
func tolerates(p Pod, n Node) bool {
	for _, t := range n.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !p.GPU || t.Key != gpuResource {
			return false
		}
	}
	return true
}

// fits says whether requests fit in free, one pod slot included.
func fits(requests, free corev1.ResourceList) bool {
	for r, q := range requests {
		f, ok := free[r]
		if !ok || f.Cmp(q) < 0 {
			return false
		}
	}
	if pods, ok := free[corev1.ResourcePods]; ok && pods.Sign() <= 0 {
		return false
	}
	return true
}

// history is what the streams hold about the run's workloads.
type history struct {
	// newest is the mark of the newest Apply decision per workload and cluster.
	newest map[string]map[string]applyMark
	// outcomes counts the stored Applied outcomes per decision id.
	outcomes map[string]int
	// workloadOf names the workload of each decision id.
	workloadOf map[string]string
}

type applyMark struct {
	sequence uint64
	mark     string
}

// readHistory reads both streams whole, as an auditor would.
func readHistory(ctx context.Context, js jetstream.JetStream) (history, error) {
	h := history{newest: map[string]map[string]applyMark{}, outcomes: map[string]int{}, workloadOf: map[string]string{}}
	err := audit.AuditTail(ctx, js, audit.AuditQuery{}, func(r audit.AuditRecord) error {
		switch p := r.Payload.(type) {
		case *schemas.PlacementDecided:
			if p.Action != schemas.ActionApply || p.Workload.Kind != "PyTorchJob" {
				return nil
			}
			k := key(p.Workload.Namespace, p.Workload.Name)
			h.workloadOf[p.DecisionID] = k
			if h.newest[k] == nil {
				h.newest[k] = map[string]applyMark{}
			}
			if p.Sequence >= h.newest[k][p.Cluster].sequence {
				h.newest[k][p.Cluster] = applyMark{sequence: p.Sequence, mark: applier.SequenceAnnotation(p)}
			}
		case *schemas.PlacementApplied:
			h.outcomes[p.DecisionID]++
		}
		return nil
	})
	if err != nil {
		return h, fmt.Errorf("read the streams: %w", err)
	}
	return h, nil
}

// checkHistory: no decision was applied twice, and every copy carries the newest decision for its cluster.
func checkHistory(h history, seen observed) []string {
	var violations []string
	for id, n := range h.outcomes {
		if n > 1 {
			violations = append(violations, fmt.Sprintf("%s: decision %s applied %d times", cmp.Or(h.workloadOf[id], "?"), id, n))
		}
	}
	for k, copies := range seen.copies {
		for _, c := range copies {
			newest, ok := h.newest[k][c.cluster]
			switch {
			case !ok:
				violations = append(violations, fmt.Sprintf("%s: copy on %s with no Apply decision for it in the streams", k, c.cluster))
			case c.decision != newest.mark:
				violations = append(violations, fmt.Sprintf("%s: copy on %s carries decision %q, the newest is %q", k, c.cluster,
					c.decision, newest.mark))
			}
		}
	}
	slices.Sort(violations)
	return violations
}
