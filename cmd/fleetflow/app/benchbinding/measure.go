package benchbinding

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/schemas"
)

// ModeResult is what one mode measured.
type ModeResult struct {
	Mode Mode `json:"mode"`
	// Placed and Unschedulable count the gangs by the verdict they had when the measurement ended.
	Placed        int `json:"placed"`
	Unschedulable int `json:"unschedulable"`
	// FullyBound counts the placed gangs all of whose pods kube-scheduler bound within the bind timeout of the
	// gang's first pod; FullyBoundShare is their share of Placed.
	FullyBound      int     `json:"fullyBound"`
	FullyBoundShare float64 `json:"fullyBoundShare"`
	// PlacedPods are the pods of the placed gangs; PodsPending those left Pending as Unschedulable (kube-scheduler
	// found no node with room) at the end, PodsMissing those never created.
	PlacedPods  int `json:"placedPods"`
	PodsPending int `json:"podsPending"`
	PodsMissing int `json:"podsMissing"`
	// PodsPinned are the pods of placed gangs the pinner pinned to a node (a required node affinity on
	// metadata.name); 0 unless the mode pins.
	PodsPinned int `json:"podsPinned"`
	// PlacedGPUs are the GPUs the placed gangs request; BoundGPUs those of their bound pods.
	PlacedGPUs int `json:"placedGPUs"`
	BoundGPUs  int `json:"boundGPUs"`
	// PendingGPUs are the GPUs the pods Pending at the end request: GPU-hours lost per hour while they pend.
	// IdleGPUs are those of the bound pods of gangs not fully bound: held, but the gang cannot start.
	PendingGPUs int `json:"pendingGPUs"`
	IdleGPUs    int `json:"idleGPUs"`
	// PendingGPUHours is, over the pods Pending at the end, GPUs × time since the pod was created.
	PendingGPUHours float64 `json:"pendingGPUHours"`
	// IdleGPUHours is, over the bound pods of gangs not fully bound, GPUs × time since binding: held, but the
	// gang cannot start.
	IdleGPUHours float64 `json:"idleGPUHours"`
	// VerdictSeconds is the time from submitting the gangs to the last one's verdict; WindowSeconds the time
	// from submitting to the end of the measurement.
	VerdictSeconds float64 `json:"verdictSeconds"`
	WindowSeconds  float64 `json:"windowSeconds"`
}

// measurer polls the control plane for verdicts and the clusters for pods until every placed gang is fully
// bound or its bind timeout passed.
type measurer struct {
	cfg          *Config
	controlPlane *kube.Clients
	clusters     map[string]*kube.Clients
	gangs        []gang
	submitted    time.Time
}

// gangState is what the measurer saw of one gang.
type gangState struct {
	verdict, cluster string
	// placedSeen is when a poll first saw it Placed.
	placedSeen time.Time
	pods       []corev1.Pod
}

// pollInterval is how often the measurer reads the verdicts and pods; the times it reports come from the
// objects' own timestamps, so it bounds only how soon the run ends.
const pollInterval = time.Second

func (m *measurer) run(ctx context.Context, fleet *localfleet.Fleet, pipelineDone chan error) (*ModeResult, error) {
	states := make([]gangState, len(m.gangs))
	var lastVerdict time.Time
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		now := time.Now()
		verdicts, err := m.readVerdicts(ctx, states, now)
		if err != nil {
			return nil, err
		}
		if verdicts < len(states) {
			lastVerdict = time.Time{}
		} else if lastVerdict.IsZero() {
			lastVerdict = now
		}
		if err := m.readPods(ctx, states); err != nil {
			return nil, err
		}
		if verdicts == len(states) && m.settled(states, now) {
			return m.result(states, lastVerdict, now), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d gangs have a verdict, and not every placed one settled: %w", verdicts, len(states), ctx.Err())
		case err := <-pipelineDone:
			pipelineDone <- err
			return nil, fmt.Errorf("pipeline stopped: %w", err)
		case <-fleet.Exited():
			return nil, fmt.Errorf("fleet process exited: %w", fleet.ExitErr())
		case <-ticker.C:
		}
	}
}

// readVerdicts reads each gang's verdict annotations on the control plane and returns how many have one.
func (m *measurer) readVerdicts(ctx context.Context, states []gangState, now time.Time) (int, error) {
	byName := map[string]map[string]string{}
	for _, gvk := range gvks(m.cfg) {
		mapping, err := m.controlPlane.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return 0, fmt.Errorf("control plane: %s: %w", gvk.Kind, err)
		}
		list, err := m.controlPlane.Dynamic.Resource(mapping.Resource).Namespace(benchNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, fmt.Errorf("control plane: list %s: %w", gvk.Kind, err)
		}
		for _, item := range list.Items {
			byName[gvk.Kind+"/"+item.GetName()] = item.GetAnnotations()
		}
	}
	verdicts := 0
	for i, g := range m.gangs {
		a := byName[g.kind.GVK.Kind+"/"+g.name]
		st := &states[i]
		st.verdict, st.cluster = a[schemas.AnnotationPlacement], a[schemas.AnnotationCluster]
		if st.verdict != "" {
			verdicts++
		}
		if st.verdict == string(schemas.VerdictPlaced) && st.placedSeen.IsZero() {
			st.placedSeen = now
		}
	}
	return verdicts, nil
}

// readPods lists the bench's pods on every cluster and gives each placed gang the pods its operator made.
func (m *measurer) readPods(ctx context.Context, states []gangState) error {
	byCluster := map[string][]corev1.Pod{}
	for name, c := range m.clusters {
		list, err := c.Core.CoreV1().Pods(benchNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("cluster %s: list pods: %w", name, err)
		}
		byCluster[name] = list.Items
	}
	for i, g := range m.gangs {
		st := &states[i]
		st.pods = st.pods[:0]
		if st.verdict != string(schemas.VerdictPlaced) {
			continue
		}
		for _, p := range byCluster[st.cluster] {
			if p.Labels[g.kind.PodLabel] == g.name && p.DeletionTimestamp == nil {
				st.pods = append(st.pods, p)
			}
		}
	}
	return nil
}

// settled reports whether every placed gang is fully bound or past its bind timeout.
func (m *measurer) settled(states []gangState, now time.Time) bool {
	for i, g := range m.gangs {
		st := &states[i]
		if st.verdict != string(schemas.VerdictPlaced) {
			continue
		}
		if boundPods(st.pods) < g.pods && now.Sub(st.placedSeen) < m.cfg.BindTimeout {
			return false
		}
	}
	return true
}

func (m *measurer) result(states []gangState, lastVerdict, end time.Time) *ModeResult {
	r := &ModeResult{VerdictSeconds: lastVerdict.Sub(m.submitted).Seconds(), WindowSeconds: end.Sub(m.submitted).Seconds()}
	for i, g := range m.gangs {
		st := &states[i]
		switch st.verdict {
		case string(schemas.VerdictPlaced):
		case string(schemas.VerdictUnschedulable):
			r.Unschedulable++
			continue
		default:
			continue
		}
		r.Placed++
		r.PlacedPods += g.pods
		r.PlacedGPUs += g.pods * g.gpus
		r.PodsMissing += max(0, g.pods-len(st.pods))
		if fullyBound(st.pods, g.pods, m.cfg.BindTimeout) {
			r.FullyBound++
		}
		whole := boundPods(st.pods) >= g.pods
		for _, p := range st.pods {
			if pinned(&p) {
				r.PodsPinned++
			}
			if p.Spec.NodeName != "" {
				r.BoundGPUs += g.gpus
				if !whole {
					r.IdleGPUs += g.gpus
					r.IdleGPUHours += float64(g.gpus) * end.Sub(boundAt(&p)).Hours()
				}
				continue
			}
			if unschedulable(&p) {
				r.PodsPending++
				r.PendingGPUs += g.gpus
				r.PendingGPUHours += float64(g.gpus) * end.Sub(p.CreationTimestamp.Time).Hours()
			}
		}
	}
	if r.Placed > 0 {
		r.FullyBoundShare = float64(r.FullyBound) / float64(r.Placed)
	}
	return r
}

// fullyBound reports whether all want pods exist and were bound within limit of the first one's creation.
func fullyBound(pods []corev1.Pod, want int, limit time.Duration) bool {
	if len(pods) < want || boundPods(pods) < want {
		return false
	}
	first := pods[0].CreationTimestamp.Time
	for _, p := range pods {
		first = minTime(first, p.CreationTimestamp.Time)
	}
	for i := range pods {
		if boundAt(&pods[i]).Sub(first) > limit {
			return false
		}
	}
	return true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// boundPods counts the pods kube-scheduler bound to a node.
func boundPods(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// boundAt is when a bound pod's PodScheduled condition turned True, its creation when it has none.
func boundAt(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return p.CreationTimestamp.Time
}

// unschedulable reports whether kube-scheduler found no node for the pod: PodScheduled False, reason
// Unschedulable.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// pinned reports whether a pod has a required node affinity to one node by name, as the pinner gives it.
func pinned(p *corev1.Pod) bool {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil ||
		p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return true
			}
		}
	}
	return false
}
