package simulate

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// StatusSkipped is the status of a workload in a namespace fleetflow leaves alone (Input.SkippedNamespaces); the
// other statuses are the placer's verdicts.
const StatusSkipped = "Skipped"

// Result is one workload's outcome. WriteJSON prints its fields under these names, the reasons grouped by reason
// text (GroupReasons).
type Result struct {
	Workload string           `json:"workload"`
	Policy   *string          `json:"policy"`
	Status   string           `json:"status"`
	Clusters []string         `json:"clusters"`
	Replicas map[string]int64 `json:"replicas,omitempty"`
	// Reasons says, per cluster passed over, why.
	Reasons map[string]string `json:"reasons"`
	// Message explains a decision no per-cluster reason covers (no policy, a group that fits nowhere).
	Message string `json:"message,omitempty"`
	// Pods lists, per cluster and node, the pods reserved there: "cluster/node": {"component": n}.
	Pods map[string]map[string]int64 `json:"pods,omitempty"`
}

// Run builds the fleet view of in and places its workloads in order.
func Run(in *Input, logger *slog.Logger) ([]Result, error) {
	if logger == nil {
		logger = slog.Default()
	}
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in ResourceInterfaces: %w", err)
	}
	registry := karta.NewRegistry(builtins...)
	for i, obj := range in.File.ResourceInterfaces {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, &FieldError{Path: fmt.Sprintf("resourceInterfaces[%d]", i), Reason: err.Error()}
		}
		source := fmt.Sprintf("%s: resourceInterfaces[%d]", in.Source, i)
		ris, err := karta.ParseResourceInterfaces(data, source)
		if err != nil {
			return nil, &FieldError{Path: fmt.Sprintf("resourceInterfaces[%d]", i), Reason: err.Error()}
		}
		for _, ri := range ris {
			compiled, err := karta.Compile(ri, source)
			if err != nil {
				return nil, &FieldError{Path: fmt.Sprintf("resourceInterfaces[%d]", i), Reason: err.Error()}
			}
			registry = registry.With(compiled)
		}
	}

	analyses, errs := analyzeAll(registry, in.Objects)
	kinds := kindInfo(registry, analyses)
	var policies []*policy.Policy
	for i := range in.File.Policies {
		p, err := policy.Compile(&in.File.Policies[i], kinds)
		var verr *policy.ValidationError
		if errors.As(err, &verr) {
			for _, fe := range verr.Errors {
				errs = append(errs, &FieldError{Path: fmt.Sprintf("policies[%d].%s", i, fe.Path), Reason: fe.Reason})
			}
			continue
		}
		policies = append(policies, p)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fleet file %s: %w", in.Source, errors.Join(errs...))
	}

	h, err := newHarness(in.File.Fleet(), policies, registry, workloadNamespaces(in.Objects))
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(analyses))
	skipped := make([]string, len(analyses))
	for i, a := range analyses {
		// The control-plane producer publishes no workload of a skipped namespace: the placer never sees it,
		// so it neither is placed nor joins a groupBy group.
		if ns := a.Namespace; in.SkippedNamespaces != nil && in.SkippedNamespaces.MatchString(ns) {
			skipped[i] = "namespace " + ns + " is the control plane's own (--skip-namespaces): fleetflow never places " +
				"nor annotates its workloads"
			continue
		}
		labels := objectLabels(in.Objects[i])
		wl, err := h.store.UpsertWorkload(h.nextSeq(), structs.WorkloadInfo{Analysis: a, Labels: labels, Generation: 1})
		if err != nil {
			return nil, fmt.Errorf("workloads[%d]: %w", i, err)
		}
		ids[i] = wl.ID
	}
	sched := scheduler.New(logger)
	st := scheduler.State(h.store.Snapshot())
	results := make([]Result, 0, len(ids))
	for i, id := range ids {
		if skipped[i] != "" {
			results = append(results, Result{Workload: analyses[i].Kind + "/" + analyses[i].Namespace + "/" + analyses[i].Name, Status: StatusSkipped, Clusters: []string{},
				Reasons: map[string]string{}, Message: skipped[i]})
			continue
		}
		plan, next, err := sched.Process(st, h.planner, id)
		if err != nil {
			return nil, err
		}
		st = next
		results = append(results, toResult(plan.Decisions[0]))
	}
	return results, nil
}

// analyzeAll analyzes the objects on every core: an analysis depends on its object and the RIs only, so the
// order they run in changes nothing, and placement, which comes after, stays in the file's order. The errors
// come in the objects' order.
func analyzeAll(registry *karta.Registry, objects []map[string]any) ([]*karta.Analysis, []error) {
	analyses := make([]*karta.Analysis, len(objects))
	failures := make([]error, len(objects))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(objects); i = int(next.Add(1) - 1) {
				analyses[i], failures[i] = analyze(registry, objects[i])
			}
		})
	}
	wg.Wait()
	var errs []error
	for i, err := range failures {
		if err != nil {
			analyses[i] = nil
			errs = append(errs, &FieldError{Path: fmt.Sprintf("workloads[%d]", i), Reason: err.Error()})
		}
	}
	return analyses, errs
}

// analyze reads a workload through its RI. A kind no RI describes (a CRD, a ConfigMap: what a level-1 policy
// copies) asks nothing of the fleet's capacity and is placed by its policy alone, as the placer does: a
// Duplicate policy puts it on every cluster it selects.
func analyze(registry *karta.Registry, obj map[string]any) (*karta.Analysis, error) {
	ri, ok := registry.Lookup(karta.GVKOf(obj))
	if !ok {
		// Parse made sure these are strings.
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		namespace, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		return &karta.Analysis{APIVersion: apiVersion, Kind: kind, Namespace: namespace, Name: name,
			Status: karta.PhaseUndefined}, nil
	}
	return ri.Analyze(obj)
}

type harness struct {
	store   *state.Store
	planner *scheduler.StorePlanner
	seq     uint64
}

func (h *harness) nextSeq() uint64 {
	h.seq++
	return h.seq
}

// newHarness loads the fleet into a fresh store. Every namespace, those the file lists and those its workloads are
// in, carries the label kubernetes.io/metadata.name with its name, as the API server sets it on every namespace:
// a policy selecting namespaces by name matches in the placer, and must match here too.
func newHarness(fleet fleetspec.Fleet, policies []*policy.Policy, registry *karta.Registry, workloadNamespaces []string) (*harness, error) {
	store, err := state.NewStore(state.Config{})
	if err != nil {
		return nil, err
	}
	h := &harness{store: store}
	// Simulated time stands still: no reservation expires during a run.
	now := time.Unix(0, 0)
	h.planner = &scheduler.StorePlanner{Store: store, NextSeq: h.nextSeq, Now: func() time.Time { return now }}
	namespaces := map[string]map[string]string{}
	for _, name := range workloadNamespaces {
		namespaces[name] = nil
	}
	for name, ns := range fleet.Namespaces {
		namespaces[name] = ns.Labels
	}
	for _, name := range slices.Sorted(maps.Keys(namespaces)) {
		nsLabels := maps.Clone(namespaces[name])
		if nsLabels == nil {
			nsLabels = map[string]string{}
		}
		nsLabels[corev1.LabelMetadataName] = name
		if err := store.UpsertNamespace(h.nextSeq(), &structs.Namespace{Name: name, Labels: nsLabels}); err != nil {
			return nil, err
		}
	}
	for _, c := range fleet.Clusters {
		cluster := &structs.Cluster{Name: c.Name, Labels: c.Labels, Taints: c.Taints, Ready: c.IsReady()}
		if len(c.APIs) > 0 {
			cluster.APIs = map[string]struct{}{}
			for _, api := range c.APIs {
				cluster.APIs[api] = struct{}{}
			}
		}
		if err := store.UpsertCluster(h.nextSeq(), cluster); err != nil {
			return nil, err
		}
		var infos []structs.NodeInfo
		for _, n := range c.AllNodes() {
			infos = append(infos, structs.NodeInfo{Cluster: c.Name, Name: n.Name, Labels: n.Labels, Taints: n.Taints,
				Unschedulable: n.Unschedulable, Allocatable: n.Allocatable, Requested: n.Requested})
		}
		if err := store.UpsertNodes(h.nextSeq(), infos...); err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
	}
	for _, p := range policies {
		if err := store.UpsertPolicy(h.nextSeq(), p); err != nil {
			return nil, err
		}
	}
	for _, ri := range registry.All() {
		if err := store.UpsertResourceInterface(h.nextSeq(), &structs.ResourceInterface{Name: ri.Name,
			Group: ri.GVK.Group, Kind: ri.GVK.Kind, Engine: ri}); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// kindInfo answers policy validation's question "is this kind divisible?" as the placer does, from the RIs in
// force, and also says no when one of the fleet file's workloads of that kind analyzes to something other than
// a single scalable component.
func kindInfo(registry *karta.Registry, analyses []*karta.Analysis) policy.KindInfo {
	return func(group, kind string) (bool, bool) {
		divisible, known := registry.DivisibleGroupKind(group, kind)
		if !divisible {
			return false, known
		}
		for _, a := range analyses {
			if a == nil || a.Kind != kind || structs.APIGroup(a.APIVersion) != group {
				continue
			}
			if len(a.Components) != 1 || !a.Components[0].Scalable {
				return false, true
			}
		}
		return true, true
	}
}

// workloadNamespaces lists the namespace of each object (Parse put those without one in default).
func workloadNamespaces(objects []map[string]any) []string {
	out := make([]string, 0, len(objects))
	for _, obj := range objects {
		meta, _ := obj["metadata"].(map[string]any)
		if ns, _ := meta["namespace"].(string); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

func objectLabels(obj map[string]any) map[string]string {
	meta, _ := obj["metadata"].(map[string]any)
	raw, _ := meta["labels"].(map[string]any)
	if len(raw) == 0 {
		return nil
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

func toResult(d *structs.Decision) Result {
	r := Result{Workload: d.Workload, Status: string(d.Status), Clusters: d.Clusters, Reasons: d.Reasons,
		Message: d.Message}
	if d.Policy != "" {
		p := d.Policy
		r.Policy = &p
	}
	if r.Clusters == nil {
		r.Clusters = []string{}
	}
	if d.Replicas != nil {
		r.Replicas = d.Replicas
	}
	for _, a := range d.Assignments {
		if r.Pods == nil {
			r.Pods = map[string]map[string]int64{}
		}
		key := structs.NodeID(a.Cluster, a.Node)
		if r.Pods[key] == nil {
			r.Pods[key] = map[string]int64{}
		}
		r.Pods[key][a.Component] += a.Pods
	}
	return r
}
