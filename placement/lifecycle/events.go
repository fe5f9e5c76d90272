package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/internal/jsondec"
	"github.com/fleetflow/fleetflow/internal/jsonenc"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/placement/scheduler"
	"github.com/fleetflow/fleetflow/placement/state"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

func workloadIDOf(ref schemas.ObjectRef) string {
	return structs.WorkloadID(ref.APIVersion, ref.Kind, ref.Namespace, ref.Name)
}

func (p *Controller) entry(ref schemas.ObjectRef) *workloadEntry {
	id := workloadIDOf(ref)
	e := p.workloads[id]
	if e == nil {
		e = &workloadEntry{id: id, ref: ref}
		p.workloads[id] = e
	}
	if ref.UID != "" && e.ref.UID != ref.UID {
		delete(p.byUID, e.ref.UID)
		e.ref = ref
	}
	if ref.UID != "" {
		p.byUID[ref.UID] = id
	}
	return e
}

func (p *Controller) onWorkloadChanged(payload *schemas.ObjectChanged, touched *touchedSet, rebuilding bool) error {
	ref := payload.Ref()
	e := p.entry(ref)
	before := e.generation
	if err := e.setObject(payload.Object, payload.ObjectJSON, &p.scratch); err != nil {
		return fmt.Errorf("workload %s: %w: %w", ref.Key(), ErrPermanent, err)
	}
	if avoid := p.avoided(e.id); !rebuilding && before > 0 && e.generation > before && len(avoid) > 0 {
		// The next write of the workload drops them (workloadInfo).
		p.log.Info("a new version of the workload may go back to the clusters it was moved off", "workload", ref.Key(),
			"generation", e.generation, "clusters", slices.Sorted(maps.Keys(avoid)))
	}
	e.labels = labelsOf(payload.Object)
	e.deleted = false
	analysis, err := p.analyze(payload.Object)
	if err != nil {
		e.setAnalysis(nil, err.Error())
		touched.invalid[e.id] = err.Error()
		p.log.Warn("workload cannot be analyzed", "workload", ref.Key(), "error", err)
		var failure *karta.AnalysisError
		if errors.As(err, &failure) {
			// The verdict names the CR's field; the RI's jq is for whoever debugs the RI.
			p.log.Debug("resource interface expression that failed", "workload", ref.Key(), "resource_interface", failure.RI,
				"component", failure.Component, "ri_field", failure.Field, "expr", failure.Expr)
		}
		return nil
	}
	e.setAnalysis(analysis, "")
	if rebuilding {
		return p.upsertWorkload(e)
	}
	return p.upsertAndProcess(e, touched)
}

// upsertAndProcess stores a workload's new version and its placement cycle's plan in one write of the store.
// When that fails, it stores the version and runs the cycle on their own, as the scheduler runs it for any
// workload: planning again on a fresh view when the plan is stale, and keeping the version when it fails.
func (p *Controller) upsertAndProcess(e *workloadEntry, touched *touchedSet) error {
	plan, err := p.upsertAndPlan(p.at.seq, p.at.now, p.workloadInfo(e), func(view *state.Snapshot) (*structs.Plan, error) {
		return p.sched.Schedule(view, e.id)
	})
	if err != nil {
		p.log.Debug("placing a workload in one write failed; storing it and placing it apart", "workload", e.ref.Key(), "error", err)
		if err := p.upsertWorkload(e); err != nil {
			// The store is in memory: what it refuses (a quantity it cannot hold) it refuses every time, so
			// a retry would only end in dropping the event. The workload is shown Invalid instead.
			e.setAnalysis(nil, err.Error())
			touched.invalid[e.id] = err.Error()
			p.log.Warn("workload cannot be stored", "workload", e.ref.Key(), "error", err)
			return nil
		}
		return p.process(e.id, touched)
	}
	for _, d := range plan.Decisions {
		p.record(d, touched)
	}
	return nil
}

// setObject keeps what the placer needs of a new version of the workload's object. encoded, when set, is the
// object as the event carried it, which is kept as it is instead of encoding the object again.
func (e *workloadEntry) setObject(object map[string]any, encoded []byte, scratch *[]byte) error {
	if encoded == nil {
		// Encoded into the placer's scratch buffer and copied out at its exact size: the bytes are kept for
		// the workload's lifetime, a buffer grown from nothing would be reallocated a dozen times.
		var err error
		if encoded, err = jsonenc.Append((*scratch)[:0], object); err != nil {
			return fmt.Errorf("encode object: %w", err)
		}
		*scratch = encoded
	}
	e.objectJSON = bytes.Clone(encoded)
	e.content = ""
	e.resourceVersion = schemas.ResourceVersionOf(object)
	e.generation = objects.GenerationOf(object)
	return nil
}

// object decodes the workload's object again, for the rare paths that read it after the event that
// brought it (a changed RI, a failed status, a Divide share); nil when the workload has none.
func (e *workloadEntry) object() (map[string]any, error) {
	if e.objectJSON == nil {
		return nil, nil
	}
	object, err := jsondec.DecodeObject(e.objectJSON)
	if err != nil {
		return nil, fmt.Errorf("workload %s: decode its object: %w", e.ref.Key(), err)
	}
	return object, nil
}

func (p *Controller) upsertWorkload(e *workloadEntry) error {
	_, err := p.store.UpsertWorkload(p.at.seq, p.workloadInfo(e))
	return err
}

// workloadInfo is what the store keeps of a workload. The clusters it was moved off (its pods pended, it failed,
// its Apply was refused) kept off the version that could not run there: a new spec (fewer replicas, smaller
// pods, a fix) may, so a new generation (not the first one seen) may go back, and its verdict no longer names
// them, which a restarted placer reads.
func (p *Controller) workloadInfo(e *workloadEntry) structs.WorkloadInfo {
	info := structs.WorkloadInfo{Labels: e.labels, Generation: e.generation, Analysis: e.analysis}
	if wl := p.store.Snapshot().Workload(e.id); wl != nil && (wl.Generation == 0 || wl.Generation >= e.generation) {
		info.Avoid = wl.Avoid
	}
	return info
}

// analyze reads a workload through its RI. A kind without an RI (a CRD, a ConfigMap, a Namespace: what
// level 1 copies) asks nothing of the fleet's capacity.
func (p *Controller) analyze(object map[string]any) (*karta.Analysis, error) {
	gvk := karta.GVKOf(object)
	ri, ok := p.registry.Lookup(gvk)
	if !ok {
		ref := schemas.RefOf(object)
		return &karta.Analysis{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Status: karta.PhaseUndefined}, nil
	}
	return ri.AnalyzeDecoded(object)
}

func (p *Controller) onWorkloadDeleted(payload *schemas.ObjectDeleted, touched *touchedSet) error {
	e := p.entry(payload.Workload)
	e.deleted = true
	e.objectJSON = nil
	p.blocked.Forget(e.id)
	var clusters []string
	if wl := p.store.Snapshot().Workload(e.id); wl != nil && wl.Placement != nil {
		clusters = wl.Placement.Clusters
	}
	if err := p.store.DeleteWorkload(p.at.seq, e.id); err != nil {
		return err
	}
	touched.add(e.id)
	for _, c := range clusters {
		p.wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: c}, touched)
	}
	return nil
}

func (p *Controller) onPolicyChanged(payload *schemas.ObjectChanged, touched *touchedSet, rebuilding bool) error {
	name := policyName(payload.Ref())
	var sp v1alpha1.SchedulePolicy
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(payload.Object, &sp); err != nil {
		p.policies[name] = &policyEntry{name: name, err: fmt.Errorf("SchedulePolicy %s: %w", name, err)}
		p.log.Warn("policy rejected", "policy", name, "error", err)
		return nil
	}
	sp.Name = name
	ref := payload.Ref()
	return p.compilePolicy(name, refusedObject{subject: schemas.PolicySubject(ref), uid: ref.UID}, &sp, touched, rebuilding)
}

// compilePolicy puts a version of a policy in force, or keeps the last valid version and says why not.
func (p *Controller) compilePolicy(name string, object refusedObject, sp *v1alpha1.SchedulePolicy, touched *touchedSet, rebuilding bool) error {
	compiled, err := policy.Compile(sp, objects.KindInfo(p.registry))
	if err != nil {
		// Like an admission webhook would, keep the last valid version and say why the new one is refused.
		// The state stream holds the newest version alone: a rebuild looks the last valid one up in the
		// events stream's history (recoverLastValid).
		last := p.policyOrNil(name)
		p.policies[name] = &policyEntry{name: name, compiled: last, err: err, refused: sp, object: object}
		if last != nil {
			p.log.Warn("policy rejected; keeping its last valid version", "policy", name, "error", err)
		} else {
			p.log.Warn("policy rejected; not in force", "policy", name, "error", err)
		}
		return nil
	}
	before := p.policyOrNil(name)
	p.policies[name] = &policyEntry{name: name, compiled: compiled}
	if err := p.store.UpsertPolicy(p.at.seq, compiled); err != nil {
		return err
	}
	if rebuilding {
		return nil
	}
	if before != nil && before.Spec.PinPods != compiled.Spec.PinPods {
		// Its copies are applied again, their pod templates gated or not: no placement changes for it.
		for _, wl := range p.store.Snapshot().Workloads() {
			if wl.Placement != nil && wl.Placement.Policy == name {
				touched.add(wl.ID)
			}
		}
	}
	return p.policiesChanged(touched)
}

// recompileRefusedPolicies compiles again the policies refused so far, once the RIs changed: one that named
// a kind no RI described may name it now.
func (p *Controller) recompileRefusedPolicies(touched *touchedSet, rebuilding bool) error {
	for _, name := range slices.Sorted(maps.Keys(p.policies)) {
		if e := p.policies[name]; e.refused != nil {
			if err := p.compilePolicy(name, e.object, e.refused, touched, rebuilding); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *Controller) policyOrNil(name string) *policy.Policy {
	if e := p.policies[name]; e != nil {
		return e.compiled
	}
	return nil
}

// policyName keeps namespaced policies apart from cluster-wide ones of the same name.
func policyName(ref schemas.ObjectRef) string {
	if ref.Namespace == "" {
		return ref.Name
	}
	return ref.Namespace + "/" + ref.Name
}

func (p *Controller) onPolicyDeleted(payload *schemas.ObjectDeleted, touched *touchedSet, rebuilding bool) error {
	name := policyName(payload.Workload)
	delete(p.policies, name)
	if err := p.store.DeletePolicy(p.at.seq, name); err != nil {
		return err
	}
	if rebuilding {
		return nil
	}
	return p.policiesChanged(touched)
}

// policiesChanged moves placed workloads whose answer changed and retries the blocked ones.
func (p *Controller) policiesChanged(touched *touchedSet) error {
	if err := p.reevaluate(scheduler.AffectedByPolicy(p.store.Snapshot()), touched); err != nil {
		return err
	}
	p.wake(scheduler.Event{Kind: scheduler.EventPolicyChanged}, touched)
	return nil
}

func (p *Controller) onResourceInterfaceChanged(payload *schemas.ObjectChanged, touched *touchedSet, rebuilding bool) error {
	name := payload.Ref().Name
	data, err := json.Marshal(payload.Object)
	if err != nil {
		return err
	}
	source := "ResourceInterface " + name
	ris, err := karta.ParseResourceInterfaces(data, source)
	if err == nil && len(ris) != 1 {
		err = fmt.Errorf("%s: want exactly one ResourceInterface, got %d", source, len(ris))
	}
	var compiled *karta.Compiled
	if err == nil {
		compiled, err = karta.Compile(ris[0], source)
	}
	if err != nil {
		// An invalid RI never affects the ones already loaded.
		p.log.Warn("ResourceInterface rejected", "ri", name, "error", err)
		ref := payload.Ref()
		p.refusedRIs[name] = refusedObject{subject: schemas.ResourceInterfaceSubject(ref), uid: ref.UID}
		return nil
	}
	compiled.Created = objects.RICreated(payload.Object)
	delete(p.refusedRIs, name)
	if len(compiled.Warnings) > 0 {
		p.log.Warn("ResourceInterface has fields the engine ignores", "ri", name, "warnings", compiled.Warnings)
	}
	p.registry = p.registry.With(compiled)
	if err := p.store.UpsertResourceInterface(p.at.seq, &structs.ResourceInterface{Name: compiled.Name,
		Group: compiled.GVK.Group, Kind: compiled.GVK.Kind, Engine: compiled}); err != nil {
		return err
	}
	if err := p.recompileRefusedPolicies(touched, rebuilding); err != nil {
		return err
	}
	return p.reanalyze(compiled.GVK.Group, compiled.GVK.Kind, touched, rebuilding)
}

func (p *Controller) onResourceInterfaceDeleted(payload *schemas.ObjectDeleted, touched *touchedSet, rebuilding bool) error {
	var gvkGroup, gvkKind string
	for _, ri := range p.registry.All() {
		if ri.Name == payload.Workload.Name && !ri.Builtin {
			gvkGroup, gvkKind = ri.GVK.Group, ri.GVK.Kind
		}
	}
	delete(p.refusedRIs, payload.Workload.Name)
	p.registry = p.registry.Without(payload.Workload.Name)
	if err := p.store.DeleteResourceInterface(p.at.seq, payload.Workload.Name); err != nil {
		return err
	}
	if gvkKind == "" {
		return nil
	}
	return p.reanalyze(gvkGroup, gvkKind, touched, rebuilding)
}

// reanalyze re-reads every workload of a kind whose RI changed, and re-places it.
func (p *Controller) reanalyze(group, kind string, touched *touchedSet, rebuilding bool) error {
	for _, id := range slices.Sorted(maps.Keys(p.workloads)) {
		e := p.workloads[id]
		if e.objectJSON == nil || e.deleted || e.ref.Kind != kind || e.ref.Group() != group {
			continue
		}
		object, err := e.object()
		if err != nil {
			return err
		}
		if err := p.onWorkloadChanged(&schemas.ObjectChanged{Object: object}, touched, rebuilding); err != nil {
			return err
		}
	}
	return nil
}

func (p *Controller) onNamespace(eventType string, payload schemas.Payload, touched *touchedSet, rebuilding bool) error {
	var err error
	changed := ""
	if eventType == schemas.TypeNamespaceDeleted {
		err = p.store.DeleteNamespace(p.at.seq, payload.(*schemas.ObjectDeleted).Workload.Name)
	} else {
		obj := payload.(*schemas.ObjectChanged)
		changed = obj.Ref().Name
		err = p.store.UpsertNamespace(p.at.seq, &structs.Namespace{Name: changed, Labels: labelsOf(obj.Object)})
	}
	if err != nil || rebuilding {
		return err
	}
	if changed != "" {
		p.relabelStaleNamespaces(changed, touched)
	}
	// A namespace's labels can hand its workloads to another policy.
	return p.policiesChanged(touched)
}

// relabelStaleNamespaces has the labels of a control-plane namespace (only, or every one when "") reach the
// clusters where the newest Apply into it (whose labels the applier gave the namespace last) carried others: one
// workload of the namespace applied on each such cluster has its Apply sent again, carrying them. Without it, a
// Pod Security level tightened on the control plane would reach a cluster only with the next edit of a workload
// there. It compares what was applied with what the namespace is, not the namespace with its last version, so
// a rebuild finds the namespaces relabelled while no placer ran, and an event handled again finds what it found.
func (p *Controller) relabelStaleNamespaces(only string, touched *touchedSet) {
	type newest struct {
		sequence uint64
		labels   string
	}
	last := map[[2]string]newest{} // namespace, cluster
	byNamespace := map[string][]string{}
	for _, e := range p.workloads {
		if e.ref.Namespace == "" || only != "" && e.ref.Namespace != only {
			continue
		}
		byNamespace[e.ref.Namespace] = append(byNamespace[e.ref.Namespace], e.id)
		for _, c := range p.publishedOn(e.id) {
			key, prev := [2]string{e.ref.Namespace, c.Cluster}, c.Published
			if prev.Action == structs.CopyApply && prev.Sequence > last[key].sequence {
				last[key] = newest{sequence: prev.Sequence, labels: prev.NamespaceLabels}
			}
		}
	}
	snap := p.store.Snapshot()
	stale := map[string]map[string]bool{} // namespace → clusters
	for _, key := range slices.SortedFunc(maps.Keys(last), func(a, b [2]string) int {
		return strings.Compare(a[0]+"/"+a[1], b[0]+"/"+b[1])
	}) {
		namespace, cluster := key[0], key[1]
		if last[key].labels == namespaceLabelsKey(propagatedNamespaceLabels(snap.Namespace(namespace))) {
			continue
		}
		if stale[namespace] == nil {
			stale[namespace] = map[string]bool{}
		}
		stale[namespace][cluster] = true
	}
	if len(stale) == 0 {
		return
	}
	for _, namespace := range slices.Sorted(maps.Keys(stale)) {
		clusters := stale[namespace]
		ids := byNamespace[namespace]
		slices.Sort(ids)
		p.relabelNamespaceOn(ids, func(cluster string) bool { return clusters[cluster] }, touched)
	}
}

// relabelNamespaceOn is relabelStaleNamespaces for the workloads ids of one namespace, on the clusters on says.
func (p *Controller) relabelNamespaceOn(ids []string, on func(cluster string) bool, touched *touchedSet) {
	carried := map[string]bool{}
	for _, id := range ids {
		e := p.workloads[id]
		if e.deleted || e.objectJSON == nil {
			continue
		}
		for _, c := range p.publishedOn(id) {
			// Not a copy that finished (sent again, a job cleaned up after it ran would run again), one leaving the
			// cluster, or one whose Apply there failed: no Apply would go, and the namespace keep its labels.
			cluster := c.Cluster
			if carried[cluster] || c.Reapply != structs.ReapplyNone || c.Finished || !on(cluster) || !p.placedAndAppliedOn(e, cluster) {
				continue
			}
			carried[cluster] = true
			p.editCopy(id, cluster, func(c *structs.Copy) { c.Reapply = structs.ReapplyDue })
			touched.add(id)
		}
	}
}

func (p *Controller) cluster(name string) *clusterEntry {
	c := p.clusters[name]
	if c == nil {
		c = &clusterEntry{name: name}
		p.clusters[name] = c
	}
	return c
}

// syncCluster writes a cluster's view into the store. A cluster is Ready while it is registered and its
// heartbeat is fresh; until its producer reports installed APIs it serves none, so nothing lands on a
// cluster that may lack the framework's CRD.
func (p *Controller) syncCluster(c *clusterEntry) error {
	if !c.registered {
		return nil
	}
	apis := map[string]struct{}{}
	for _, api := range c.apis {
		apis[api] = struct{}{}
	}
	return p.store.UpsertCluster(p.at.seq, &structs.Cluster{Name: c.name, Labels: c.labels, Taints: c.taints,
		Invalid: c.invalid, Ready: c.ready, NotReady: p.notReady(c), APIs: apis})
}

// notReady says why a cluster is not Ready, in words that stay the same until it is again, since a verdict is
// published again when its reasons change.
func (p *Controller) notReady(c *clusterEntry) string {
	switch {
	case c.ready:
		return ""
	case c.lastHeartbeat.IsZero():
		return "its producer has sent no heartbeat yet (the Cluster's Joined condition says whether fleetflow reaches it)"
	default:
		return fmt.Sprintf("its producer has sent no heartbeat since %s (timeout %s)",
			c.lastHeartbeat.UTC().Format(time.RFC3339), p.config.HeartbeatTimeout)
	}
}

func (p *Controller) fresh(c *clusterEntry) bool {
	return !c.lastHeartbeat.IsZero() && p.at.now.Sub(c.lastHeartbeat) < p.config.HeartbeatTimeout
}

func (p *Controller) onClusterChanged(payload *schemas.ObjectChanged, touched *touchedSet, rebuilding bool) error {
	c := p.cluster(payload.Ref().Name)
	delete(p.deletedClusters, c.name) // registered again: what its producer sends counts again
	var spec v1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(payload.Object, &spec); err != nil {
		p.log.Warn("Cluster rejected", "cluster", c.name, "error", err)
		return nil
	}
	wasReady := c.registered && c.ready
	c.registered = true
	c.labels = spec.Labels
	c.taints = make([]corev1.Taint, len(spec.Spec.Taints))
	for i := range spec.Spec.Taints {
		c.taints[i] = spec.Spec.Taints[i].Taint()
	}
	c.invalid = ""
	if why := objects.InvalidCluster(&spec); why != "" {
		c.invalid = "takes no new workloads: " + why
		p.log.Warn("Cluster is invalid; it takes no new workloads until it is fixed", "cluster", c.name, "reason", why)
	}
	c.ready = p.fresh(c)
	if c.ready && !wasReady && !rebuilding {
		p.log.Info("cluster Ready", "cluster", c.name)
	}
	if err := p.syncCluster(c); err != nil {
		return err
	}
	if err := p.replayHeld(c.name, touched, rebuilding); err != nil {
		return err
	}
	if rebuilding {
		return nil
	}
	return p.clusterChanged(c.name, touched)
}

// clusterChanged moves workloads that no longer belong on the cluster and retries the blocked ones.
func (p *Controller) clusterChanged(name string, touched *touchedSet) error {
	if ce := p.clusters[name]; ce != nil {
		ce.changedAt = p.at.seq
	}
	for _, c := range p.ledger.CopiesOn(name) {
		e := p.workloads[c.WorkloadID]
		if e == nil {
			continue
		}
		if c.Redelete {
			touched.add(c.WorkloadID) // a Delete that failed while the cluster was down can be sent again
		}
		if c.Reapply != structs.ReapplyNone && !e.deleted {
			touched.add(c.WorkloadID) // its Apply given up on is due again (reapplyDue)
		}
	}
	if err := p.reevaluate(scheduler.AffectedByClusterChange(p.store.Snapshot(), name), touched); err != nil {
		return err
	}
	p.wake(scheduler.Event{Kind: scheduler.EventClusterChanged, Cluster: name}, touched)
	return nil
}

func (p *Controller) onClusterDeleted(payload *schemas.ObjectDeleted, touched *touchedSet, rebuilding bool) error {
	name := payload.Workload.Name
	affected := scheduler.AffectedByCluster(p.store.Snapshot(), name)
	delete(p.clusters, name)
	p.nodeWakes.forgetCluster(name)
	if err := p.store.DeleteCluster(p.at.seq, name); err != nil {
		return err
	}
	p.deletedClusters[name] = true
	delete(p.heldOfDeleted, name) // reports of the cluster before this deletion
	p.reportGoneCluster(name)
	if rebuilding {
		return nil
	}
	// A copy kept running there while its workload is placed nowhere (Unschedulable, NoPolicy) is not among
	// affected: publishDecisions deletes it, since fleetflow no longer watches that cluster. Left untouched, it
	// would run unseen, and the control plane would go on showing the workload running there. The workload is
	// judged again, so its verdict no longer says the copy runs there nor gives the cluster's reason.
	snap := p.store.Snapshot()
	for _, c := range p.ledger.CopiesOn(name) {
		id, e := c.WorkloadID, p.workloads[c.WorkloadID]
		if e == nil || !c.Applied() {
			continue
		}
		touched.add(id)
		if wl := snap.Workload(id); wl != nil && wl.Placement == nil && !e.deleted && e.objectJSON != nil {
			if err := p.process(id, touched); err != nil {
				return err
			}
		}
	}
	// Every workload on the cluster that left goes elsewhere, a completed one too: fleetflow no longer watches
	// that cluster, and would otherwise send its copy there again were it registered again.
	return p.reevaluateAll(affected, touched)
}

// reportGoneCluster has the pruner remove what the state stream holds of a deleted cluster, once per batch.
func (p *Controller) reportGoneCluster(name string) {
	if !slices.Contains(p.forgotten.fleet.Clusters, name) {
		p.forgotten.fleet.Clusters = append(p.forgotten.fleet.Clusters, name)
	}
}

// sentAfterDeletion reports whether an event of cluster came after its Cluster object was deleted, with no
// Cluster of that name registered since, and has the pruner remove what it left in the state stream.
func (p *Controller) sentAfterDeletion(cluster string) bool {
	if !p.deletedClusters[cluster] {
		return false
	}
	p.reportGoneCluster(cluster)
	return true
}

// heldReports are what a deleted cluster's producer sent after the deletion (see Controller.heldOfDeleted).
type heldReports struct {
	nodes map[string]*schemas.NodeState
	apis  *schemas.ClusterAPIs
}

// maxHeldClusters bounds the deleted clusters whose late reports are held.
const maxHeldClusters = 64

// hold keeps a late report of a deleted cluster: n or apis.
func (p *Controller) hold(cluster string, n *schemas.NodeState, apis *schemas.ClusterAPIs) {
	if p.heldOfDeleted == nil {
		p.heldOfDeleted = map[string]*heldReports{}
	}
	h := p.heldOfDeleted[cluster]
	if h == nil {
		if len(p.heldOfDeleted) >= maxHeldClusters {
			return
		}
		h = &heldReports{nodes: map[string]*schemas.NodeState{}}
		p.heldOfDeleted[cluster] = h
	}
	if n != nil {
		h.nodes[n.Name] = n
	}
	if apis != nil {
		h.apis = apis
	}
}

// replayHeld applies what a cluster registered again sent while it counted as deleted.
func (p *Controller) replayHeld(cluster string, touched *touchedSet, rebuilding bool) error {
	h := p.heldOfDeleted[cluster]
	delete(p.heldOfDeleted, cluster)
	if h == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(h.nodes)) {
		if err := p.onNode(h.nodes[name], touched, rebuilding); err != nil {
			return err
		}
	}
	if h.apis != nil {
		return p.onAPIs(h.apis, touched, rebuilding)
	}
	return nil
}

func (p *Controller) onHeartbeat(hb *schemas.ClusterHeartbeat, touched *touchedSet, rebuilding bool) error {
	if p.sentAfterDeletion(hb.Cluster) {
		return nil
	}
	c := p.cluster(hb.Cluster)
	if at := schemas.AsStored(hb.Time, p.at.stored); at.After(c.lastHeartbeat) {
		c.lastHeartbeat = at
	}
	if c.ready || !p.fresh(c) {
		return nil
	}
	c.ready = true
	if c.registered && !rebuilding {
		// A rebuild takes each heartbeat at the time it was stored, when it was fresh: restore says which
		// clusters are Ready now.
		p.log.Info("cluster Ready", "cluster", c.name)
	}
	if err := p.syncCluster(c); err != nil || rebuilding {
		return err
	}
	return p.clusterChanged(c.name, touched)
}

func (p *Controller) onAPIs(apis *schemas.ClusterAPIs, touched *touchedSet, rebuilding bool) error {
	if p.sentAfterDeletion(apis.Cluster) {
		p.hold(apis.Cluster, nil, apis)
		return nil
	}
	c := p.cluster(apis.Cluster)
	sorted := slices.Sorted(slices.Values(apis.APIs))
	if slices.Equal(sorted, c.apis) {
		return nil
	}
	c.apis = sorted
	if err := p.syncCluster(c); err != nil || rebuilding {
		return err
	}
	return p.clusterChanged(c.name, touched)
}

func (p *Controller) onNode(n *schemas.NodeState, touched *touchedSet, rebuilding bool) error {
	if p.sentAfterDeletion(n.Cluster) {
		p.hold(n.Cluster, n, nil)
		return nil
	}
	var pods map[string]int64
	var requestedBy map[string]corev1.ResourceList
	if len(n.WorkloadPods) > 0 {
		pods = map[string]int64{}
		for uid, count := range n.WorkloadPods {
			id, ok := p.byUID[uid]
			if !ok {
				continue
			}
			label := structs.WorkloadLabelValue(id)
			pods[label] += int64(count)
			// Each pod also takes one of the node's pods, as the node's own requested counts it.
			list := maps.Clone(n.WorkloadRequested[uid])
			if list == nil {
				list = corev1.ResourceList{}
			}
			list[corev1.ResourcePods] = *resource.NewQuantity(int64(count), resource.DecimalSI)
			if requestedBy == nil {
				requestedBy = map[string]corev1.ResourceList{}
			}
			requestedBy[label] = list
		}
	}
	taints := internTaints(n.Taints)
	if !n.Ready {
		// A node that is not Ready takes no new pods, as the node lifecycle controller's taint says.
		taints = append(taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	}
	// kube-scheduler counts every pod bound to the node against allocatable pods, whatever it requests.
	requested := n.Requested
	if n.Pods > 0 {
		requested = maps.Clone(requested)
		if requested == nil {
			requested = corev1.ResourceList{}
		}
		requested[corev1.ResourcePods] = *resource.NewQuantity(int64(n.Pods), resource.DecimalSI)
	}
	err := p.store.UpsertNodes(p.at.seq, structs.NodeInfo{Cluster: internString(n.Cluster), Name: n.Name,
		Labels: internLabels(n.Labels, n.Name), Taints: taints, Unschedulable: n.Unschedulable,
		Allocatable: n.Allocatable, Requested: requested, PodsByWorkload: pods, RequestedByWorkload: requestedBy})
	if err != nil || rebuilding {
		return err
	}
	p.nodeReported(n.Cluster, touched)
	return nil
}

func (p *Controller) onNodeDeleted(n *schemas.NodeDeleted, touched *touchedSet, rebuilding bool) error {
	if p.sentAfterDeletion(n.Cluster) {
		return nil
	}
	affected := scheduler.AffectedByCluster(p.store.Snapshot(), n.Cluster)
	if err := p.store.DeleteNode(p.at.seq, n.Cluster, n.Name); err != nil {
		return err
	}
	p.forgotten.fleet.Nodes = append(p.forgotten.fleet.Nodes, *n)
	if rebuilding {
		return nil
	}
	// Workloads on the cluster may no longer fit there without the node.
	return p.reevaluate(affected, touched)
}

func (p *Controller) onStatus(s *schemas.WorkloadStatus, touched *touchedSet, rebuilding bool) error {
	p.sentAfterDeletion(s.Cluster) // handled all the same: it is about a workload
	if rebuilding {
		p.noteGoneCopy(s.Workload.UID, s.Cluster, s)
	}
	id, ok := p.byUID[s.Workload.UID]
	if !ok {
		return nil
	}
	e := p.workloads[id]
	switch {
	case s.Gone || s.PendingPods == 0 || s.PendingSince == nil:
		if e.pendingCluster == s.Cluster {
			e.pendingCluster, e.pendingSince = "", time.Time{}
		}
	default:
		// The pods' creation time is by the workload cluster's clock, and the timeout is measured by the streams'
		// server's: what counts is how long they had pended when the producer reported, by its own clock.
		age := max(p.at.eventTime.Sub(*s.PendingSince), 0)
		if p.at.eventTime.IsZero() {
			age = 0
		}
		e.pendingCluster, e.pendingSince = s.Cluster, p.at.now.Add(-age)
		p.pending[id] = struct{}{}
	}
	if e.objectJSON == nil {
		return nil
	}
	// A Gone carries the copy's last status, which says whether it finished before it went.
	phase, known, err := p.notePhase(e, s)
	if err != nil {
		return err
	}
	if s.Gone {
		if !rebuilding {
			return p.reapplyDeletedCopy(e, s.Cluster, touched)
		}
		return nil
	}
	if !known || rebuilding {
		return nil
	}
	if wl := p.store.Snapshot().Workload(id); wl != nil && wl.Reservation != nil &&
		(phase == karta.PhaseCompleted || phase == karta.PhaseFailed) {
		released, err := p.store.ReleaseReservationOn(p.at.seq, id, s.Cluster)
		if err != nil {
			return err
		}
		if released {
			p.wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: s.Cluster}, touched)
		}
	}
	if phase != karta.PhaseFailed || !p.reschedulesOnFailure(id) {
		return nil
	}
	return p.moveOff(e, s.Cluster, "the workload failed there and its policy reschedules on failure", false, touched)
}

// notePhase records whether the copy s reports on finished and completed (structs.Copy), from its
// status mapped through the workload's RI, against its cluster's share for a Divide; known is false when s has
// no status or the RI maps none.
func (p *Controller) notePhase(e *workloadEntry, s *schemas.WorkloadStatus) (phase karta.Phase, known bool, err error) {
	if s.Status == nil {
		return "", false, nil
	}
	withStatus, err := e.object()
	if err != nil {
		return "", false, err
	}
	ri, ok := p.registry.Lookup(karta.GVKOf(withStatus))
	if !ok {
		return "", false, nil
	}
	// A Divide's copy runs its cluster's share, and its status is judged against that share.
	if share := p.copyOf(e.id, s.Cluster).Published; share.Action == structs.CopyApply && share.Replicas > 0 {
		if wl := p.store.Snapshot().Workload(e.id); wl != nil {
			for _, g := range wl.PodGroups {
				if g.Scalable && len(g.ReplicasFieldPath) > 0 {
					if err := unstructured.SetNestedField(withStatus, share.Replicas, g.ReplicasFieldPath...); err != nil {
						return "", false, fmt.Errorf("set %v of %s: %w", g.ReplicasFieldPath, e.ref, err)
					}
					break
				}
			}
		}
	}
	withStatus["status"] = s.Status
	if phase, err = ri.Phase(withStatus); err != nil {
		return "", false, nil
	}
	finished := phase == karta.PhaseCompleted || phase == karta.PhaseFailed
	completed := phase == karta.PhaseCompleted
	if c := p.copyOf(e.id, s.Cluster); c.Finished != finished || c.Completed != completed {
		p.editCopy(e.id, s.Cluster, func(c *structs.Copy) { c.Finished, c.Completed = finished, completed })
	}
	return phase, true, nil
}

// noteGoneCopy keeps, while rebuilding, the copies of workload uid whose last state read is gone (status
// s) and that no Apply to their cluster followed; status nil forgets one, as an Apply does.
func (p *Controller) noteGoneCopy(uid, cluster string, s *schemas.WorkloadStatus) {
	if s != nil && s.Gone {
		if p.rebuild.goneCopies == nil {
			p.rebuild.goneCopies = map[string]map[string]*schemas.WorkloadStatus{}
		}
		if p.rebuild.goneCopies[uid] == nil {
			p.rebuild.goneCopies[uid] = map[string]*schemas.WorkloadStatus{}
		}
		p.rebuild.goneCopies[uid][cluster] = s
		return
	}
	delete(p.rebuild.goneCopies[uid], cluster)
	if len(p.rebuild.goneCopies[uid]) == 0 {
		delete(p.rebuild.goneCopies, uid)
	}
}

// reapplyGoneCopies applies again, once a rebuild has restored where each workload is placed, the copies
// deleted in their clusters while no placer ran (or before it handled their Gone), on the terms a running
// placer applies them again (reapplyDeletedCopy). Whether the copy had finished is read from the status the
// Gone carries, else from the last status with one in the subject's history of the same workload (a Gone
// from a producer that did not carry it; the subject names the workload, which may have been created again
// under its name); a copy that reported none had not.
func (p *Controller) reapplyGoneCopies(history History, touched *touchedSet) error {
	for _, uid := range slices.Sorted(maps.Keys(p.rebuild.goneCopies)) {
		id, ok := p.byUID[uid]
		if !ok {
			continue
		}
		e := p.workloads[id]
		for _, cluster := range slices.Sorted(maps.Keys(p.rebuild.goneCopies[uid])) {
			s := p.rebuild.goneCopies[uid][cluster]
			if e.objectJSON == nil {
				continue
			}
			// The history is read only for a copy that could be applied again; one gone from a cluster the
			// workload is not placed on now no longer stands, as for a running placer.
			if !p.placedAndAppliedOn(e, cluster) {
				if err := p.reapplyDeletedCopy(e, cluster, touched); err != nil {
					return err
				}
				continue
			}
			if s.Status == nil {
				last, err := lastStatusWithOne(history, schemas.WorkloadStatusSubject(cluster, s.Workload), uid)
				if err != nil {
					return err
				}
				if last != nil {
					s = last
				}
			}
			if _, _, err := p.notePhase(e, s); err != nil {
				return err
			}
			if err := p.reapplyDeletedCopy(e, cluster, touched); err != nil {
				return err
			}
		}
	}
	p.rebuild.goneCopies = nil
	return nil
}

// placedAndAppliedOn reports whether e is placed on cluster and its copy there was applied, not deleted on
// purpose: a copy gone from such a cluster is one reapplyDeletedCopy may apply again.
func (p *Controller) placedAndAppliedOn(e *workloadEntry, cluster string) bool {
	if c := p.copyOf(e.id, cluster); !c.Applied() || e.deleted {
		return false // never applied there, or deleted on purpose
	}
	wl := p.store.Snapshot().Workload(e.id)
	return wl != nil && wl.Placement != nil && slices.Contains(wl.Placement.Clusters, cluster)
}

// reapplyBackoff is how soon a copy deleted in its cluster again is not applied again.
const reapplyBackoff = 30 * time.Second

// reapplyDeletedCopy applies again a copy that went from a cluster the workload is placed on, though no
// Delete was sent (someone deleted it there), as Karmada re-creates a deleted member-cluster object: the
// control plane says where the workload runs. A copy that finished first is left gone: a job cleaned up
// after it completed must not run again. One deleted again within reapplyBackoff is left gone too, with
// a warning, rather than fight whatever keeps deleting it; the next change of the workload applies it.
//
// A copy that goes from a cluster the workload is not placed on now, though it kept running there (the workload
// Unschedulable, its edit not carried out), is not applied again, but its Apply no longer stands: were the
// workload placed there again, it would be taken as applied, and no copy would run.
func (p *Controller) reapplyDeletedCopy(e *workloadEntry, cluster string, touched *touchedSet) error {
	log := p.log.With("workload", e.ref.Key(), "cluster", cluster)
	if !p.placedAndAppliedOn(e, cluster) {
		if c := p.copyOf(e.id, cluster); c.Applied() && !e.deleted {
			log.Info("the copy of the workload is gone from a cluster it is not placed on now; applied again if placed there again")
			p.editCopy(e.id, cluster, forgetPublished)
			touched.add(e.id)
			if d := p.blocked.Decision(e.id); d != nil {
				touched.decided(d) // its verdict, sent again, no longer says the copy runs there
			} else if e.analysisErr != "" {
				touched.invalid[e.id] = e.analysisErr // nor does its Invalid one (a restarted placer keeps it placed nowhere)
			}
			// Nor does it keep the workload there: no pods of its own hold room there, and a taint that keeps
			// new workloads off keeps it off too.
			return p.notKeptOn(e.id, cluster)
		}
		return nil
	}
	c := p.copyOf(e.id, cluster)
	if c.Finished {
		log.Info("the finished copy of the workload is gone from its cluster; not applied again")
		return nil
	}
	if e.analysisErr != "" {
		// Its current version is an edit the RI cannot read, which no Apply carries (publishDecisions): the copy
		// stays gone until the workload can be analyzed, and its Invalid verdict, sent again, no longer says it
		// keeps running there.
		log.Info("the copy of the workload was deleted in its cluster; not applied again while the workload cannot be analyzed")
		p.editCopy(e.id, cluster, forgetPublished)
		touched.add(e.id)
		touched.invalid[e.id] = e.analysisErr
		return nil
	}
	if last := c.Reapplied; !last.IsZero() && p.at.now.Sub(last) < reapplyBackoff {
		log.Warn("the copy of the workload was deleted in its cluster again soon after it was applied again; "+
			"left deleted until the workload changes", "backoff", reapplyBackoff)
		return nil
	}
	log.Info("the copy of the workload was deleted in its cluster; applying it again")
	p.editCopy(e.id, cluster, func(c *structs.Copy) {
		c.Reapplied = p.at.now
		forgetPublished(c)
	})
	touched.add(e.id)
	return nil
}

// notKeptOn drops a cluster from where a workload placed nowhere is kept (structs.Workload.Kept), once no copy of
// it runs there.
func (p *Controller) notKeptOn(id, cluster string) error {
	wl := p.store.Snapshot().Workload(id)
	if wl == nil || wl.Placement != nil || !slices.Contains(wl.Kept, cluster) {
		return nil
	}
	var kept []string
	for _, c := range wl.Kept {
		if c != cluster {
			kept = append(kept, c)
		}
	}
	if err := p.store.KeepOn(p.at.seq, id, kept); err != nil {
		return fmt.Errorf("lifecycle: %s no longer kept on %s: %w", id, cluster, err)
	}
	return nil
}

// reschedulesOnFailure reports whether the policy that placed a workload asks to move it when it fails. A
// Duplicate copy has nowhere to move (every eligible cluster has one), so it stays as without the setting.
func (p *Controller) reschedulesOnFailure(id string) bool {
	wl := p.store.Snapshot().Workload(id)
	if wl == nil || wl.Placement == nil || p.duplicated(wl) {
		return false
	}
	pe := p.policies[wl.Placement.Policy]
	return pe != nil && pe.compiled != nil && pe.compiled.Spec.RescheduleOnFailure
}

// duplicated reports whether the policy that placed a workload copies it to every eligible cluster.
func (p *Controller) duplicated(wl *structs.Workload) bool {
	pe := p.policies[wl.Placement.Policy]
	return pe != nil && pe.compiled != nil && pe.compiled.Spec.SpreadConstraints != nil &&
		pe.compiled.Spec.SpreadConstraints.SpreadMode == v1alpha1.SpreadModeDuplicate
}

// moveOff moves a placed workload off one cluster when another cluster fits it now; otherwise it stays,
// and a later event tries again, logged at debug level when quiet. Reasons are kept on the workload so its
// verdict says why it left.
//
// A Duplicate copy never moves: every other eligible cluster has its own copy already, so moving it off would
// only withdraw it, which a Duplicate does only when its cluster stops matching or leaves the fleet.
func (p *Controller) moveOff(e *workloadEntry, cluster, why string, quiet bool, touched *touchedSet) error {
	wl := p.store.Snapshot().Workload(e.id)
	if wl == nil || wl.Placement == nil || !slices.Contains(wl.Placement.Clusters, cluster) || e.analysis == nil {
		return nil
	}
	if p.duplicated(wl) {
		p.log.Debug("a Duplicate copy stays on its cluster: every eligible cluster has one", "workload", e.ref.Key(),
			"cluster", cluster, "why", why)
		return nil
	}
	if err := p.avoid(e, cluster, why); err != nil {
		return err
	}
	plan, err := p.sched.Schedule(p.store.Snapshot(), e.id)
	if err == nil && len(plan.Decisions) > 0 && plan.Decisions[0].Status == structs.StatusPlaced {
		if _, err = p.planner().SubmitPlan(plan); err == nil {
			for _, d := range plan.Decisions {
				p.record(d, touched)
			}
			p.log.Info("moving workload off a cluster", "workload", e.ref.Key(), "from", cluster,
				"to", plan.Decisions[0].Clusters, "why", why)
			return nil
		}
	}
	// Nowhere else fits (or the view moved under the plan): stay, and try again on a later event.
	if err := p.avoid(e, cluster, ""); err != nil {
		return err
	}
	level := slog.LevelInfo
	if quiet {
		level = slog.LevelDebug
	}
	p.log.Log(context.Background(), level, "workload should leave a cluster but no other cluster fits it now",
		"workload", e.ref.Key(), "cluster", cluster, "why", why, "error", err)
	return p.upsertWorkload(e)
}

func (p *Controller) onApplied(a *schemas.PlacementApplied, touched *touchedSet) {
	p.sentAfterDeletion(a.Cluster) // the runner of a deleted cluster reports the Deletes it carries out
	id, ok := p.byUID[a.Workload.UID]
	if !ok {
		return
	}
	if c := p.copyOf(id, a.Cluster); a.Sequence > c.Confirmed {
		p.editCopy(id, a.Cluster, func(c *structs.Copy) { c.Confirmed = a.Sequence })
	}
	// A confirmed apply on a move's new cluster releases the delete on the old one.
	touched.add(id)
}

func (p *Controller) onFailed(f *schemas.PlacementFailed, touched *touchedSet, rebuilding bool) error {
	p.sentAfterDeletion(f.Cluster)
	if !rebuilding {
		p.log.Warn("applier could not carry out a decision", "workload", f.Workload.Key(), "cluster", f.Cluster,
			"action", f.Action, "error", f.Error)
	}
	if f.Action != schemas.ActionDelete {
		return p.onApplyFailed(f, touched, rebuilding)
	}
	p.onDeleteFailed(f, touched)
	return nil
}

// onApplyFailed records an Apply an applier gave up on (forbidden, invalid, its CRD never came), and moves the
// workload off that cluster when its policy reschedules on failure and another cluster fits. While
// rebuilding it only records: what was published is known once the whole state is read, and the next tick
// acts on it.
func (p *Controller) onApplyFailed(f *schemas.PlacementFailed, touched *touchedSet, rebuilding bool) error {
	var e *workloadEntry
	if rebuilding {
		// The state stream may hold the workload's last version after the failure, as a newer version takes
		// the older one's place; the failure is kept on the entry it creates, unless the name belongs to
		// another workload.
		if other := p.workloads[workloadIDOf(f.Workload)]; other != nil && other.ref.UID != f.Workload.UID {
			return nil
		}
		e = p.entry(f.Workload)
	} else {
		id, ok := p.byUID[f.Workload.UID]
		if !ok {
			return nil
		}
		e = p.workloads[id]
	}
	if e.deleted {
		return nil
	}
	if c := p.copyOf(e.id, f.Cluster); c.Failed.Sequence < f.Sequence {
		p.editCopy(e.id, f.Cluster, func(c *structs.Copy) {
			c.Failed = structs.FailedApply{Sequence: f.Sequence, Err: f.Error, At: p.at.now}
		})
		p.leaving[e.id] = struct{}{}
	}
	if c := p.copyOf(e.id, f.Cluster); c.Applied() && c.Published.Sequence == f.Sequence {
		p.editCopy(e.id, f.Cluster, func(c *structs.Copy) { c.Reapply, c.ReapplyAfter = structs.ReapplyWaits, p.at.seq })
	}
	if rebuilding {
		return nil
	}
	return p.leaveFailedApplies(e, false, touched)
}

// leaveFailedApplies moves a workload off each cluster where an applier gave up on its Apply, when its
// policy reschedules on failure and another cluster fits; otherwise it stays, and the tick tries again. A
// failure stops counting once a newer decision for that cluster was published (a new version of the
// workload may apply), or once the workload left the cluster.
//
// retry is set for the tick's attempts, which log at debug level that the workload stays: the first attempt
// said so already.
func (p *Controller) leaveFailedApplies(e *workloadEntry, retry bool, touched *touchedSet) error {
	failing := false
	for _, c := range p.ledger.CopiesOf(e.id) {
		cluster, failed := c.Cluster, c.Failed
		if failed.Sequence == 0 {
			continue
		}
		wl := p.store.Snapshot().Workload(e.id)
		placed := wl != nil && wl.Placement != nil && slices.Contains(wl.Placement.Clusters, cluster)
		if !c.Applied() || c.Published.Sequence != failed.Sequence || !placed {
			p.editCopy(e.id, cluster, func(c *structs.Copy) { c.Failed = structs.FailedApply{} })
			continue
		}
		if !p.reschedulesOnFailure(e.id) {
			failing = true
			continue // reported on the workload by the status writer; it stays, as its policy asks
		}
		if err := p.moveOff(e, cluster, "its applier gave up applying it there: "+failed.Err, retry, touched); err != nil {
			return err
		}
		if p.avoided(e.id)[cluster] != "" {
			p.editCopy(e.id, cluster, func(c *structs.Copy) { c.Failed = structs.FailedApply{} })
			continue
		}
		failing = true
	}
	if !failing {
		delete(p.leaving, e.id)
	}
	return nil
}

// onDeleteFailed handles a Delete an applier gave up on (the cluster did not answer): the copy may still be
// there, so the Delete is sent again once the cluster is Ready.
func (p *Controller) onDeleteFailed(f *schemas.PlacementFailed, touched *touchedSet) {
	var e *workloadEntry
	if id, ok := p.byUID[f.Workload.UID]; ok {
		e = p.workloads[id]
	} else {
		// The workload was deleted, and forgotten once its Deletes were sent. Its copy may have survived on
		// the cluster that was down, so it is tracked again, as deleted, until a Delete goes through; by the
		// workload created again under its name when there is one, whose entry keeps the copy's uid for its
		// Delete (publishedDecision.uid).
		if e = p.workloads[workloadIDOf(f.Workload)]; e == nil {
			e = p.entry(f.Workload)
			e.deleted = true
		}
	}
	if prev := p.copyOf(e.id, f.Cluster).Published; prev.Action != "" && prev.Sequence > f.Sequence {
		return // a newer decision for that cluster was published since
	}
	// The copy may have survived on a cluster that was down; treat it as still applied, to be deleted
	// again once the cluster is back.
	p.editCopy(e.id, f.Cluster, func(c *structs.Copy) {
		c.Published = structs.Published{Action: structs.CopyApply, Sequence: f.Sequence, UID: f.Workload.UID}
		c.Redelete = true
	})
	touched.add(e.id)
}

func (p *Controller) onTick(tick *schemas.PlacerTick, touched *touchedSet) error {
	p.at.now = schemas.AsStored(tick.Time, p.at.stored)
	for _, name := range slices.Sorted(maps.Keys(p.clusters)) {
		c := p.clusters[name]
		if !c.registered || c.ready == p.fresh(c) {
			continue
		}
		c.ready = p.fresh(c)
		if c.ready {
			p.log.Info("cluster Ready", "cluster", name)
		} else {
			p.log.Warn("cluster NotReady: no heartbeat", "cluster", name, "last_heartbeat", c.lastHeartbeat,
				"timeout", p.config.HeartbeatTimeout)
		}
		if err := p.syncCluster(c); err != nil {
			return err
		}
		if err := p.clusterChanged(name, touched); err != nil {
			return err
		}
	}
	released, err := p.store.ExpireReservations(p.at.seq, p.at.now)
	if err != nil {
		return err
	}
	if released > 0 {
		for name := range p.clusters {
			p.wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: name}, touched)
		}
	}
	p.wakeDeferred(touched)
	if err := p.movePending(touched); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(p.leaving)) {
		e := p.workloads[id]
		if e == nil || e.deleted {
			delete(p.leaving, id)
			continue
		}
		if err := p.leaveFailedApplies(e, true, touched); err != nil {
			return err
		}
		p.retryFailedApplies(e, touched)
	}
	return nil
}

// retryFailedApplies has each Apply an applier gave up on sent again once FailedApplyRetry passed since, for a
// workload still placed there (leaveFailedApplies keeps only those): the cluster may take it now (its RBAC, a
// webhook or the kind's CRD fixed), and nothing else tells. A failure recorded while rebuilding counts from the
// first tick. Not into a NotReady cluster (a Duplicate copy stays placed on one): it would not answer, and its
// heartbeat tells when it is back, which sends the Apply again (clusterChanged).
func (p *Controller) retryFailedApplies(e *workloadEntry, touched *touchedSet) {
	if e.analysisErr != "" {
		return // no Apply goes while the workload is Invalid; its fixed version goes anyway once it can be analyzed
	}
	for _, c := range p.ledger.CopiesOf(e.id) {
		cluster, failed := c.Cluster, c.Failed
		if failed.Sequence == 0 {
			continue
		}
		if failed.At.IsZero() {
			p.editCopy(e.id, cluster, func(c *structs.Copy) { c.Failed.At = p.at.now })
			continue
		}
		if !p.reapplyWaits(c) || p.at.now.Sub(failed.At) < p.config.FailedApplyRetry || !p.clusterReady(cluster) {
			continue
		}
		p.log.Info("sending again an Apply the applier gave up on", "workload", e.ref.Key(), "cluster", cluster,
			"failed_at", failed.At, "error", failed.Err)
		p.editCopy(e.id, cluster, func(c *structs.Copy) { c.Reapply = structs.ReapplyDue })
		touched.add(e.id)
	}
}

// movePending moves workloads whose pods have been Pending on their cluster for longer than
// PendingTimeout, when another cluster fits: the capacity the cluster reported was not really there.
func (p *Controller) movePending(touched *touchedSet) error {
	for _, id := range slices.Sorted(maps.Keys(p.pending)) {
		e := p.workloads[id]
		if e == nil || e.pendingCluster == "" {
			delete(p.pending, id)
			continue
		}
		if p.at.now.Sub(e.pendingSince) < p.config.PendingTimeout || p.avoided(id)[e.pendingCluster] != "" {
			continue
		}
		why := fmt.Sprintf("its pods stayed Pending there for more than %s", p.config.PendingTimeout)
		if err := p.moveOff(e, e.pendingCluster, why, false, touched); err != nil {
			return err
		}
	}
	return nil
}

func (p *Controller) onDecided(d *schemas.PlacementDecided) {
	if e := p.workloads[workloadIDOf(d.Workload)]; e != nil && e.objectJSON != nil && !e.deleted && d.Workload.UID != "" &&
		e.ref.UID != d.Workload.UID {
		// A decision about an earlier workload of this name stored after the current one's object: the Delete of
		// a copy it left on a cluster that was down, sent again once the cluster was back. It is recorded by its
		// uid (publishedDecision.uid) and leaves the entry the current workload's, whose statuses, reports and
		// decisions go by its own uid.
		if prev := p.copyOf(e.id, d.Cluster).Published; prev.Action == "" || prev.Sequence < d.Sequence {
			p.editCopy(e.id, d.Cluster, func(c *structs.Copy) {
				c.Published = structs.Published{Action: structs.CopyAction(d.Action), Sequence: d.Sequence, UID: d.Workload.UID}
			})
		}
		return
	}
	e := p.entry(d.Workload)
	if d.Action == schemas.ActionApply {
		p.noteGoneCopy(d.Workload.UID, d.Cluster, nil)
	}
	if d.Verdict != nil {
		p.onVerdict(d.Verdict)
	}
	if d.Action == schemas.ActionApply && (e.newestApply == nil || d.Sequence > e.newestApply.sequence) {
		// Only what says where the workload is placed: keeping the decision would keep its object.
		e.newestApply = &appliedPlacement{sequence: d.Sequence, at: p.at.now, epoch: d.Epoch, policy: d.Policy, clusters: d.Clusters,
			avoid: d.Avoid}
		if p.rebuild.now.Sub(p.at.now) < p.config.ReservationTTL {
			e.newestApply.object = d.Object
		}
	}
	if prev := p.copyOf(e.id, d.Cluster).Published; prev.Action != "" && prev.Sequence > d.Sequence {
		return
	}
	// A Divide decision's object carries the cluster's share of replicas; the content compared later is
	// that of the control-plane object, which only differs there, so the share is recorded on its own.
	content := objects.ContentOf(d.Object)
	if d.SourceContent != "" && d.Replicas == 0 {
		content = d.SourceContent // a copy with gated pod templates: the control-plane object's content
	} else if d.Replicas > 0 && e.objectJSON != nil {
		var err error
		if content, err = e.contentKey(); err != nil {
			p.log.Warn("rebuild: decision not compared", "workload", e.ref.Key(), "cluster", d.Cluster, "error", err)
		}
	}
	p.editCopy(e.id, d.Cluster, func(c *structs.Copy) {
		c.Published = structs.Published{Action: structs.CopyAction(d.Action), Sequence: d.Sequence, Content: content,
			Replicas: d.Replicas, UID: d.Workload.UID, NamespaceLabels: namespaceLabelsKey(d.NamespaceLabels), Pins: d.Pins}
	})
}

// onVerdict keeps the newest verdict read: the state stream holds verdicts of their own and verdicts carried
// by decisions, in the order the server copied them.
func (p *Controller) onVerdict(v *schemas.PlacementVerdict) {
	e := p.entry(v.Workload)
	if e.restore == nil || v.Sequence >= e.restore.Sequence {
		e.restore, e.restoreAt = v, p.at.now
	}
}

func labelsOf(object map[string]any) map[string]string {
	labels, _, _ := unstructured.NestedStringMap(object, "metadata", "labels")
	return labels
}

// forgetPublished forgets the decision published for a copy: the next decision for its cluster is taken as its
// first.
func forgetPublished(c *structs.Copy) { c.Published = structs.Published{} }
