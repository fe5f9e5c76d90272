package status

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/lru"

	"github.com/fleetflow/fleetflow/consumers/internal/contract"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/schemas"
)

// StatusWriter copies what happens to a workload back onto its control-plane object: the status from its
// workload cluster (onto the status subresource), and annotations saying where it runs, its phase mapped
// through its RI, and why it is not placed.
type StatusWriter struct {
	ControlPlane *kube.Clients
	Log          *slog.Logger
	// HeartbeatTimeout is how long a silent cluster is still shown Ready (default 30s, as the placer's).
	HeartbeatTimeout time.Duration
	// Superseded, when set, reports whether the events stream holds a message on subject after sequence
	// seq. A workload status that has been superseded is not copied: the newer one is, or was, and
	// statuses can be handled out of order (one retried after a failed write while the next went through,
	// or status writers sharing the work).
	Superseded func(ctx context.Context, subject string, seq uint64) (bool, error)
	// LastStatus, when set, returns the newest workload status on subject in the events stream, nil when there
	// is none. Showing a workload placed on new clusters copies their status, which may have been handled (and
	// skipped, its cluster not yet shown) before the verdict: verdicts carried by decisions come on another
	// stream.
	LastStatus func(ctx context.Context, subject string) (*schemas.WorkloadStatus, error)
	// LastVerdict, when set, returns the newest verdict of its own on subject in the events stream (nil when
	// there is none). A NoPolicy verdict is not shown on an object that shows no verdict, and an older verdict
	// handled after it (a Placed one riding an Apply) must not be shown either: the writer remembers the ones it
	// skipped, but another replica sharing the work may have skipped it.
	LastVerdict func(ctx context.Context, subject string) (*schemas.PlacementVerdict, error)
	// Events, when set, records Kubernetes Events when what the writer shows changes: on workloads (Scheduled,
	// FailedScheduling, Moved, FailedOver, Applied, ApplyFailed), Clusters (Ready, NotReady) and SchedulePolicies
	// (Rejected).
	Events events.EventRecorder

	mu       sync.RWMutex
	ris      *karta.Registry
	clusters map[string]*clusterView
	// deletedClusters names clusters deleted since their last registration, whose late events are ignored.
	deletedClusters map[string]bool
	// unshown remembers the NoPolicy verdicts not shown on objects that show no verdict (skipped, not written),
	// by workload uid, so an older verdict handled after one (a Placed verdict carried by an Apply, read by the
	// other consumer) is not shown either. The race is short, so only the latest unshownLimit are kept.
	unshown      map[string]string
	unshownOrder []string
	// synced remembers, by workload uid, the resourceVersion of the workload its WorkloadPlacement was last
	// written from, so an event that changes nothing on the workload reads no placement.
	synced *lru.Cache
}

// unshownLimit bounds the NoPolicy verdicts remembered as not shown.
const unshownLimit = 4096

// rememberUnshown records a NoPolicy verdict at mark that was not shown on the workload of uid.
func (s *StatusWriter) rememberUnshown(uid, mark string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unshown == nil {
		s.unshown = map[string]string{}
	}
	if _, known := s.unshown[uid]; !known {
		s.unshownOrder = append(s.unshownOrder, uid)
		if len(s.unshownOrder) > unshownLimit {
			delete(s.unshown, s.unshownOrder[0])
			s.unshownOrder = s.unshownOrder[1:]
		}
	}
	s.unshown[uid] = mark
}

// unshownAfter reports whether a NoPolicy verdict after place was not shown on the workload of uid.
func (s *StatusWriter) unshownAfter(uid string, place contract.StreamPlace) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	mark, ok := s.unshown[uid]
	return ok && place.Before(mark)
}

// NewStatusWriter starts with the given RIs (normally the built-ins); RI events update them.
func NewStatusWriter(controlPlane *kube.Clients, ris *karta.Registry, log *slog.Logger) *StatusWriter {
	return &StatusWriter{ControlPlane: controlPlane, ris: ris, Log: log, synced: lru.New(syncedLimit)}
}

// Handle is the bus.Handler of the status writer's consumer.
func (s *StatusWriter) Handle(ctx context.Context, d bus.Delivery) error {
	if handled, err := s.handleFleet(ctx, d); handled {
		return err
	}
	switch p := d.Payload.(type) {
	case *schemas.WorkloadStatus:
		superseded := func() (bool, error) {
			if s.Superseded == nil {
				return false, nil
			}
			superseded, err := s.Superseded(ctx, d.Subject, d.StreamSequence)
			if err != nil {
				return false, fmt.Errorf("status of %s from %s: %w", p.Workload, p.Cluster, err)
			}
			if superseded {
				s.Log.Debug("status superseded by a newer one; not copied", "workload", p.Workload.Key(),
					"cluster", p.Cluster, "stream_seq", d.StreamSequence)
			}
			return superseded, nil
		}
		if p.Gone {
			if gone, err := superseded(); err != nil || gone {
				return err
			}
		}
		return s.copyStatus(ctx, p, superseded)
	case *schemas.PlacementVerdict:
		return s.annotateVerdict(ctx, p)
	case *schemas.PlacementDecided:
		if p.Verdict == nil {
			return nil
		}
		return s.annotateVerdict(ctx, p.Verdict)
	case *schemas.PlacementFailed, *schemas.PlacementApplied:
		// Both are reports on one subject per workload and cluster: one retried after a failed write while a
		// newer one went through must not undo it.
		if s.Superseded != nil {
			superseded, err := s.Superseded(ctx, d.Subject, d.StreamSequence)
			if err != nil || superseded {
				return err
			}
		}
		if f, ok := p.(*schemas.PlacementFailed); ok {
			return s.annotate(ctx, f.Workload, map[string]any{
				schemas.AnnotationPlacementError: fmt.Sprintf("%s on %s: %s", f.Action, f.Cluster, f.Error),
			})
		}
		applied := p.(*schemas.PlacementApplied)
		if applied.Action == schemas.ActionDelete {
			if err := s.forgetCopy(ctx, applied.Workload, applied.Cluster); err != nil {
				return err
			}
		}
		if err := s.clearPlacementError(ctx, applied); err != nil {
			return err
		}
		return s.showApplied(ctx, applied, d.Attempt)
	case *schemas.ObjectChanged:
		if d.Event.Type() == schemas.TypeResourceInterfaceChanged {
			compiled, err := s.upsertRI(p)
			if err := s.writeRICondition(ctx, p, compiled, err); err != nil {
				return err
			}
			if compiled != nil {
				if err := s.writeSupersededRIConditions(ctx, compiled); err != nil {
					return err
				}
			}
			return s.revalidatePolicies(ctx)
		}
		return nil
	case *schemas.ObjectDeleted:
		if d.Event.Type() == schemas.TypeWorkloadDeleted {
			return s.deletePlacement(ctx, p.Workload)
		}
		if d.Event.Type() == schemas.TypeResourceInterfaceDeleted {
			if err := s.removeRI(ctx, p.Workload.Name); err != nil {
				return err
			}
			return s.writeInForceRIConditions(ctx)
		}
		return nil
	default:
		return nil
	}
}

// removeRI takes a deleted RI out of force, and validates the policies again without it.
func (s *StatusWriter) removeRI(ctx context.Context, name string) error {
	s.mu.Lock()
	s.ris = s.ris.Without(name)
	s.mu.Unlock()
	return s.revalidatePolicies(ctx)
}

// writeInForceRIConditions shows each user RI in force so: after an RI's deletion, the one created before it
// for its kind is in force again, and said it was superseded.
func (s *StatusWriter) writeInForceRIConditions(ctx context.Context) error {
	var inForce []*karta.Compiled
	s.mu.RLock()
	for _, c := range s.ris.All() {
		if in, ok := s.ris.Lookup(c.GVK); ok && in == c && !c.Builtin {
			inForce = append(inForce, c)
		}
	}
	s.mu.RUnlock()
	for _, c := range inForce {
		if err := s.writeRIConditionOf(ctx, c.Name, "", 0, s.inForceCondition(c)); err != nil {
			return err
		}
	}
	return nil
}

// upsertRI puts an RI in force, or returns why it cannot be.
func (s *StatusWriter) upsertRI(p *schemas.ObjectChanged) (*karta.Compiled, error) {
	source := "ResourceInterface " + p.Ref().Name
	data, err := json.Marshal(p.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	ris, err := karta.ParseResourceInterfaces(data, source)
	if err == nil && len(ris) != 1 {
		err = fmt.Errorf("%s: want exactly one ResourceInterface, got %d", source, len(ris))
	}
	if err != nil {
		s.Log.Warn("ignoring ResourceInterface that does not parse", "ri", p.Ref().Name, "error", err)
		return nil, err
	}
	compiled, err := karta.Compile(ris[0], source)
	if err != nil {
		s.Log.Warn("ignoring ResourceInterface that does not compile", "ri", p.Ref().Name, "error", err)
		return nil, err
	}
	compiled.Created = objects.RICreated(p.Object)
	s.mu.Lock()
	s.ris = s.ris.With(compiled)
	s.mu.Unlock()
	return compiled, nil
}

// RIConditionAccepted says whether fleetflow reads workloads through a ResourceInterface applied to the
// control plane, and why not.
const RIConditionAccepted = "Accepted"

// writeRICondition shows on the RI object whether it is in force (for which kind, and which RIs it takes the
// place of) or why it was refused (its jq or structure error), so `kubectl get ri -o yaml` tells, not only the
// logs.
func (s *StatusWriter) writeRICondition(ctx context.Context, p *schemas.ObjectChanged, compiled *karta.Compiled, refused error) error {
	ref := p.Ref()
	var cond metav1.Condition
	if refused != nil {
		cond = metav1.Condition{Type: RIConditionAccepted, Status: metav1.ConditionFalse, Reason: "Invalid",
			LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
			Message:            refused.Error() + "; workloads of its kind are read as before"}
	} else {
		cond = s.inForceCondition(compiled)
		s.mu.RLock()
		in, ok := s.ris.Lookup(compiled.GVK)
		s.mu.RUnlock()
		if ok && in != compiled && !in.Builtin {
			cond = supersededCondition(in)
		}
	}
	return s.writeRIConditionOf(ctx, ref.Name, ref.UID, objects.GenerationOf(p.Object), cond)
}

// supersededCondition is the Accepted condition of a valid user RI of in's kind that in is used instead of.
func supersededCondition(in *karta.Compiled) metav1.Condition {
	gvk := in.GVK
	return metav1.Condition{Type: RIConditionAccepted, Status: metav1.ConditionFalse, Reason: "Superseded",
		LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
		Message: "valid, but not in force: ResourceInterface " + in.Name + ", created later, is used for " +
			gvk.Kind + "." + gvk.Group + "/" + gvk.Version + " instead; this one is in force again once no RI of the kind created after it is left"}
}

// inForceCondition is the Accepted condition of an RI in force: for which kind, and which RIs it is used instead
// of (the built-in one, and user RIs of the kind created before it).
func (s *StatusWriter) inForceCondition(compiled *karta.Compiled) metav1.Condition {
	gvk := compiled.GVK
	cond := metav1.Condition{Type: RIConditionAccepted, Status: metav1.ConditionTrue, Reason: "InForce",
		LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second)),
		Message:            "in force for " + gvk.Kind + "." + gvk.Group + "/" + gvk.Version}
	var others []string
	s.mu.RLock()
	for _, c := range s.ris.All() {
		if c.GVK == gvk && c.Name != compiled.Name {
			kind := "ResourceInterface"
			if c.Builtin {
				kind = "the built-in RI"
			}
			others = append(others, kind+" "+c.Name)
		}
	}
	s.mu.RUnlock()
	switch len(others) {
	case 0:
	case 1:
		cond.Message += "; used instead of " + others[0] + ", which describes the same kind"
	default:
		slices.Sort(others)
		cond.Message += "; used instead of " + strings.Join(others, ", ") + ", which describe the same kind"
	}
	if len(compiled.Warnings) > 0 {
		cond.Message += "; " + strings.Join(compiled.Warnings, "; ")
	}
	return cond
}

// writeSupersededRIConditions shows every user RI of the kind of compiled but the one in force as superseded: each
// said it was in force when it was applied, and went on saying so after another took its place.
func (s *StatusWriter) writeSupersededRIConditions(ctx context.Context, compiled *karta.Compiled) error {
	var superseded []string
	s.mu.RLock()
	in, ok := s.ris.Lookup(compiled.GVK)
	for _, c := range s.ris.All() {
		if ok && c.GVK == compiled.GVK && !c.Builtin && c != in {
			superseded = append(superseded, c.Name)
		}
	}
	s.mu.RUnlock()
	for _, name := range superseded {
		if err := s.writeRIConditionOf(ctx, name, "", 0, supersededCondition(in)); err != nil {
			return err
		}
	}
	return nil
}

// writeRIConditionOf sets cond on the RI called name. With a uid, only on that incarnation of the RI, and not on
// a generation newer than generation, whose own event writes its condition.
func (s *StatusWriter) writeRIConditionOf(ctx context.Context, name, uid string, generation int64, cond metav1.Condition) error {
	client := s.ControlPlane.Dynamic.Resource(resourceInterfaceResource)
	return rereadUntilWritten("ResourceInterface "+name, func() error {
		current, err := client.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return contract.Classify(fmt.Errorf("read ResourceInterface %s: %w", name, err))
		}
		if uid != "" && (string(current.GetUID()) != uid || current.GetGeneration() > generation) {
			return nil // another RI of that name, or a newer generation whose own event writes its condition
		}
		changed, err := kube.SetCondition(current, cond)
		if err != nil {
			return bus.Permanent(err)
		}
		if !changed {
			return nil // shown already
		}
		_, err = client.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: schemas.ManagedByFleetflow})
		switch {
		case isStale(err):
			return errStale
		case err != nil && !apierrors.IsNotFound(err):
			return contract.Classify(fmt.Errorf("write the Accepted condition of ResourceInterface %s: %w", name, err))
		}
		return nil
	})
}

func (s *StatusWriter) resource(ref schemas.ObjectRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("workload %s: apiVersion: %w", ref, err))
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gv.WithKind(ref.Kind))
	gvr, namespaced, err := s.ControlPlane.ResourceFor(obj)
	if kube.IsNoMatch(err) {
		// The workload cluster reported the kind in a version the control plane does not serve (its CRD is
		// newer there): the control-plane object is the same one, in a version the control plane serves.
		if mapping, mapErr := s.ControlPlane.Mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind()); mapErr == nil {
			gvr, namespaced, err = mapping.Resource, mapping.Scope.Name() == "namespace", nil
		}
	}
	if err != nil {
		return nil, err
	}
	if namespaced {
		return s.ControlPlane.Dynamic.Resource(gvr).Namespace(ref.Namespace), nil
	}
	return s.ControlPlane.Dynamic.Resource(gvr), nil
}

// current reads the control-plane object, with the client that wrote it; the object is nil when it is gone
// or is another incarnation.
func (s *StatusWriter) current(ctx context.Context, ref schemas.ObjectRef) (dynamic.ResourceInterface, *unstructured.Unstructured, error) {
	client, err := s.resource(ref)
	if err != nil {
		return nil, nil, err
	}
	obj, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return client, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s on the control plane: %w", ref, err)
	}
	if string(obj.GetUID()) != ref.UID {
		return client, nil, nil
	}
	return client, obj, nil
}

// errStale says the control-plane object changed between the read a write was decided on and the write (its
// resourceVersion moved on): the write is decided again on a fresh read.
var errStale = errors.New("the control-plane object changed since it was read")

// maxStaleReads bounds how often one event's write is decided again on a fresh read before it is retried
// with backoff like any other failure.
const maxStaleReads = 5

// withCurrent runs write on the current control-plane object of ref, if it still exists as that incarnation,
// and runs it again on a fresh read when the object changed before write's patches landed (errStale): the two
// consumers of the writer, and writers sharing the work, patch the same objects.
func (s *StatusWriter) withCurrent(ctx context.Context, ref schemas.ObjectRef,
	write func(client dynamic.ResourceInterface, obj *unstructured.Unstructured) error) error {
	return rereadUntilWritten(ref.String(), func() error {
		client, obj, err := s.current(ctx, ref)
		if err != nil || obj == nil {
			return err
		}
		return write(client, obj)
	})
}

// rereadUntilWritten runs readAndWrite, which reads an object and writes on it as read, again while the
// object changed in between (errStale), at most maxStaleReads times; what names the object in the error
// after that.
func rereadUntilWritten(what string, readAndWrite func() error) error {
	for range maxStaleReads {
		if err := readAndWrite(); !errors.Is(err, errStale) {
			return err
		}
	}
	return fmt.Errorf("write %s on the control plane: %w %d times in a row", what, errStale, maxStaleReads)
}

// isStale tells a write refused because the object is not the one read: its resourceVersion moved on
// (Conflict), or it is another incarnation, whose uid the patch cannot change.
func isStale(err error) bool {
	return apierrors.IsConflict(err) || (apierrors.IsInvalid(err) && strings.Contains(err.Error(), "metadata.uid"))
}

// shownClusters are the clusters a Placed verdict shown on obj names, nil when it shows none.
func shownClusters(obj *unstructured.Unstructured) []string {
	if obj.GetAnnotations()[schemas.AnnotationPlacement] != string(schemas.VerdictPlaced) {
		return nil
	}
	return clustersOf(obj)
}

// runningClusters are the clusters obj shows its copies run on while no Placed verdict shows it: those the
// last Placed verdict named, less the ones whose copy went since. Nil when it shows none, or a Placed verdict.
func runningClusters(obj *unstructured.Unstructured) []string {
	if obj.GetAnnotations()[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced) {
		return nil
	}
	return clustersOf(obj)
}

// clustersOf are the clusters obj shows, whichever verdict it shows; nil when it shows none.
func clustersOf(obj *unstructured.Unstructured) []string {
	if shown := obj.GetAnnotations()[schemas.AnnotationCluster]; shown != "" {
		return strings.Split(shown, ",")
	}
	return nil
}

// copyStatus shows p on its workload. superseded says whether the events stream holds a newer status of the
// copy; it is asked after each read of the object the status would be written on: a writer replica sharing
// the work may show the newer status between an earlier look and this write, which then fails on the object it
// read and is decided again.
func (s *StatusWriter) copyStatus(ctx context.Context, p *schemas.WorkloadStatus, superseded func() (bool, error)) error {
	if p.Gone {
		// A copy deleted in its cluster (by hand, or with its CRD) is gone as surely as one whose Delete the
		// applier carried out. Handle skipped a Gone that a newer status of the cluster superseded (the copy
		// came back), and withCurrent one of another incarnation of the workload.
		return s.forgetCopy(ctx, p.Workload, p.Cluster)
	}
	return s.withCurrent(ctx, p.Workload, func(client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		if newer, err := superseded(); err != nil || newer {
			return err
		}
		// Once a verdict shows where the workload is placed, it alone names the clusters, and only their
		// statuses are shown: not one from a cluster the workload moved off (that came back after a failover
		// and reports the old copy until its Delete goes through). A status from a new cluster handled before
		// the verdict of the move is shown with that verdict (see annotateVerdict).
		shown := shownClusters(obj)
		if shown != nil && !slices.Contains(shown, p.Cluster) {
			s.Log.Debug("status from a cluster the workload is not shown placed on; not copied", "workload", p.Workload.Key(),
				"cluster", p.Cluster, "placed_on", shown)
			return nil
		}
		// A spread no verdict places any more still runs on each of its clusters: one copy's status does not
		// make it shown on that cluster alone.
		if running := runningClusters(obj); shown == nil && len(running) > 1 && slices.Contains(running, p.Cluster) {
			shown = running
		}
		if len(shown) > 1 && s.LastStatus != nil {
			return s.showSpreadStatus(ctx, client, obj, shown, p, map[string]any{})
		}
		return s.showStatus(ctx, client, obj, p, map[string]any{schemas.AnnotationClusterPhases: nil})
	})
}

// showSpreadStatus shows a workload spread over clusters: the status of its least advanced copy (the first
// in cluster order among equals, so the status shown does not change with whichever copy reported last), each
// copy's phase, and the least advanced of those phases as the workload's. Its conditions are then those of
// the copy that holds the workload back: a Duplicate failing on one cluster does not show another's Ready.
// latest, when set, is the status being handled, which the events stream may not hand back yet as its
// cluster's last.
func (s *StatusWriter) showSpreadStatus(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	clusters []string, latest *schemas.WorkloadStatus, annotations map[string]any) error {
	ref := schemas.RefOf(obj.Object)
	statuses := make([]*schemas.WorkloadStatus, len(clusters))
	phases := make([]karta.Phase, len(clusters))
	for i, cluster := range clusters {
		phases[i] = karta.PhaseUndefined
		status := latest
		if latest == nil || latest.Cluster != cluster {
			var err error
			if status, err = s.LastStatus(ctx, schemas.WorkloadStatusSubject(cluster, ref)); err != nil {
				return err
			}
		}
		if status == nil || status.Gone || status.Workload.UID != ref.UID || status.Status == nil {
			continue
		}
		statuses[i] = status
		phases[i] = s.phaseOf(obj, status, annotations)
	}
	var err error
	if shown := leastAdvanced(statuses, phases); shown != nil {
		divided := false
		for _, cluster := range clusters {
			divided = divided || shownShare(obj, annotations, cluster) > 0
		}
		whole := &schemas.WorkloadStatus{Cluster: shown.Cluster, Workload: shown.Workload,
			Status: spreadStatus(obj, statuses, shown, divided)}
		obj, err = s.writeStatus(ctx, client, obj, whole)
	} else {
		// No copy shown has reported: a status shown is of one elsewhere (that went, or the workload left),
		// and the phases shown are of clusters no longer all shown.
		obj, err = s.clearStatus(ctx, client, obj)
	}
	if err != nil {
		return err
	}
	shownPhases := make([]string, len(clusters))
	overall := karta.PhaseCompleted
	for i, phase := range phases {
		shownPhases[i] = clusters[i] + "=" + string(phase)
		if spreadPhaseRank(phase) < spreadPhaseRank(overall) {
			overall = phase
		}
	}
	annotations[schemas.AnnotationPhase] = string(overall)
	annotations[schemas.AnnotationClusterPhases] = strings.Join(shownPhases, ",")
	return s.annotateObject(ctx, client, obj, ref, annotations)
}

// leastAdvanced is the reported status whose phase ranks lowest, the first of them among equals; nil when no
// copy reported one. statuses and phases are per cluster, a nil status for a cluster that has not reported.
func leastAdvanced(statuses []*schemas.WorkloadStatus, phases []karta.Phase) *schemas.WorkloadStatus {
	shown := -1
	for i, status := range statuses {
		if status != nil && (shown < 0 || spreadPhaseRank(phases[i]) < spreadPhaseRank(phases[shown])) {
			shown = i
		}
	}
	if shown < 0 {
		return nil
	}
	return statuses[shown]
}

// spreadStatus is the status a spread shows: shown's (see leastAdvanced), with what rollout tools read of it taken
// over every copy. Its replica counters (replicas and every *Replicas field) are the sum of the copies' for a
// Divide, whose copies each run a share, and the worst of them otherwise (the least, the most unavailable),
// each copy running the whole; its
// observedGeneration, in the control plane's terms, is the least of the copies', and behind obj's generation
// while a copy has not reported. Shown from one copy, a Deployment divided 6/4 would say 4 of 10 replicas
// ready for good, and one duplicated to three clusters would say it rolled out once the first copy had.
func spreadStatus(obj *unstructured.Unstructured, statuses []*schemas.WorkloadStatus, shown *schemas.WorkloadStatus,
	divided bool) map[string]any {
	out := maps.Clone(shown.Status)
	missing := slices.Contains(statuses, nil)
	// Every copy's counters: the API leaves a counter at 0 out, so the first copy may not have one another has.
	counters := map[string]bool{}
	for _, status := range statuses {
		if status == nil {
			continue
		}
		for key, value := range status.Status {
			if _, number := objects.AsInt64(value); number && (key == "replicas" || strings.HasSuffix(key, "Replicas")) {
				counters[key] = true
			}
		}
	}
	for key := range counters {
		var total, least, most int64
		for i, status := range statuses {
			var n int64
			if status != nil {
				n, _ = objects.AsInt64(status.Status[key])
			}
			total += n
			if i == 0 || n < least {
				least = n
			}
			most = max(most, n)
		}
		switch {
		case divided:
			out[key] = total
		case strings.HasPrefix(key, "unavailable"):
			out[key] = most // the worst copy: every copy runs the whole
		default:
			out[key] = least
		}
	}
	if _, observed := objects.AsInt64(shown.Status["observedGeneration"]); observed {
		current := &controlPlaneObject{Unstructured: obj}
		least := obj.GetGeneration()
		if missing {
			least--
		}
		for _, status := range statuses {
			if status == nil {
				continue
			}
			if n, ok := objects.AsInt64(inControlPlaneTerms(status.Status, status, current)["observedGeneration"]); ok && n < least {
				least = n
			}
		}
		out["observedGeneration"] = max(least, 0)
	}
	return out
}

// spreadPhaseRank orders phases from the least advanced: the phase a spread shows is the lowest of its copies'.
func spreadPhaseRank(phase karta.Phase) int {
	switch phase {
	case karta.PhaseFailed:
		return 0
	case karta.PhaseDegraded:
		return 1
	case karta.PhaseInitializing:
		return 2
	case karta.PhaseRunning:
		return 4
	case karta.PhaseCompleted:
		return 5
	default:
		return 3
	}
}

// showStatus copies a workload status onto obj (replacing the whole status, so fields its cluster dropped
// go too) and annotates the phase it maps to, together with annotations, all on the object as read: a
// change since makes it errStale.
func (s *StatusWriter) showStatus(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	p *schemas.WorkloadStatus, annotations map[string]any) error {
	obj, err := s.writeStatus(ctx, client, obj, p)
	if err != nil {
		return err
	}
	annotations[schemas.AnnotationPhase] = string(s.phaseOf(obj, p, annotations))
	if _, verdict := annotations[schemas.AnnotationPlacement]; !verdict && shownClusters(obj) == nil {
		annotations[schemas.AnnotationCluster] = p.Cluster
	}
	return s.annotateObject(ctx, client, obj, p.Workload, annotations)
}

// writeStatus replaces obj's status with p's, unless it is that already, and returns obj as written.
func (s *StatusWriter) writeStatus(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	p *schemas.WorkloadStatus) (*unstructured.Unstructured, error) {
	if !s.describes(obj) {
		// A kind no ResourceInterface describes is one a policy copies as it is (a CRD, a Namespace, an operator's
		// ConfigMap): its status on the control plane is its own (a CRD's is the apiserver's), and the copy's
		// only tells where it is.
		return obj, nil
	}
	// A copy without a status yet (just created, as after a move) shows none: the status shown is replaced as
	// a whole, and another cluster's old one would tell of a copy that no longer runs.
	status := p.Status
	if status == nil {
		status = map[string]any{}
	}
	status = inControlPlaneTerms(status, p, &controlPlaneObject{Unstructured: obj})
	if current, _ := obj.Object["status"].(map[string]any); sameJSON(obj.Object["status"], status) || (p.Status == nil && len(current) == 0) {
		return obj, nil
	}
	withStatus := obj.DeepCopy()
	withStatus.Object["status"] = status
	updated, err := client.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{FieldManager: schemas.ManagedByFleetflow})
	switch {
	case isStale(err):
		return nil, errStale
	case apierrors.IsNotFound(err):
		// The CRD has no status subresource (or the object is gone): the phase annotation still tells the story.
		s.Log.Debug("workload kind has no status subresource; status not copied", "workload", p.Workload.Key(), "cluster", p.Cluster)
		return obj, nil
	case apierrors.IsInvalid(err):
		// The control plane's schema refuses the cluster's status (its CRD differs, or the status breaks a rule
		// of the kind): the verdict and phase annotations are still shown, which a failed write would take along.
		s.Log.Warn("the control plane refuses the workload's status from its cluster; status not copied",
			"workload", p.Workload.Key(), "cluster", p.Cluster, "error", err)
		return obj, nil
	case err != nil:
		return nil, contract.Classify(fmt.Errorf("copy status of %s from %s: %w", p.Workload, p.Cluster, err))
	default:
		return updated, nil
	}
}

// controlPlaneObject is a control-plane workload whose content hash (contentOf) is taken once, when first asked
// for: a spread's every copy is compared with it.
type controlPlaneObject struct {
	*unstructured.Unstructured
	hash string
}

func (o *controlPlaneObject) content() string {
	if o.hash == "" {
		o.hash = objects.ContentOf(o.Object)
	}
	return o.hash
}

// inControlPlaneTerms is status with its observedGeneration, which counts the copy's generations, turned into
// the control-plane generation the copy's controller has acted on: obj's own generation once the controller
// saw the copy's newest spec and that copy is of obj's current content; one behind it (or the generation the
// copy was applied from, when lower) otherwise. Shown as it is, it would make tools that compare it with
// metadata.generation (kubectl rollout status, GitOps health checks) wait for good, or call a copy of an
// earlier version up to date. A content hash, and not the generation alone, says whether the copy is
// current: a Deployment's generation also counts changes to its annotations, fleetflow's own among them.
// Left alone when the copy does not say what it was applied from.
func inControlPlaneTerms(status map[string]any, p *schemas.WorkloadStatus, obj *controlPlaneObject) map[string]any {
	observed, ok := objects.AsInt64(status["observedGeneration"])
	if !ok {
		return status
	}
	if p.Generation <= 0 || p.SourceContent == "" || obj.GetGeneration() <= 0 {
		return status
	}
	generation := obj.GetGeneration()
	if observed < p.Generation || p.SourceContent != obj.content() {
		generation--
		if p.SourceGeneration > 0 && p.SourceGeneration <= generation {
			generation = p.SourceGeneration
			if observed < p.Generation {
				generation--
			}
		}
	}
	translated := maps.Clone(status)
	translated["observedGeneration"] = max(generation, 0)
	return translated
}

// MaxReasonsAnnotationBytes bounds AnnotationReasons. The API refuses a workload whose annotations pass 256 KiB
// together, and a verdict's reasons grow with the fleet (one line per cluster passed over): past the bound the
// annotation keeps the lines that fit and points to the audit, which has them all.
const MaxReasonsAnnotationBytes = 32 << 10

// reasonsAnnotation renders a verdict's message and its reasons, one "cluster: reason" line per cluster in name
// order, within MaxReasonsAnnotationBytes.
func reasonsAnnotation(v *schemas.PlacementVerdict) string {
	var lines []string
	if v.Message != "" {
		lines = append(lines, v.Message)
	}
	for _, c := range slices.Sorted(maps.Keys(v.Reasons)) {
		lines = append(lines, c+": "+v.Reasons[c])
	}
	text := strings.Join(lines, "\n")
	if len(text) <= MaxReasonsAnnotationBytes {
		return text
	}
	var b strings.Builder
	for i, line := range lines {
		more := fmt.Sprintf("... and %d more lines: fleetflow audit tail --workload %s shows every reason", len(lines)-i,
			v.Workload.Key())
		if b.Len()+len(line)+1+len(more) > MaxReasonsAnnotationBytes {
			b.WriteString(more)
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// clusterReplicas renders a Divide verdict's shares as AnnotationClusterReplicas; "" when it has none.
func clusterReplicas(v *schemas.PlacementVerdict) string {
	if len(v.Replicas) == 0 {
		return ""
	}
	parts := make([]string, 0, len(v.Clusters))
	for _, c := range v.Clusters {
		if n, ok := v.Replicas[c]; ok {
			parts = append(parts, c+"="+strconv.Itoa(int(n)))
		}
	}
	return strings.Join(parts, ",")
}

// shownShare is cluster's share of obj's replicas as AnnotationClusterReplicas shows it, or will once the
// pending annotations are written (a verdict shown with the statuses handled before it); 0 when none is.
func shownShare(obj *unstructured.Unstructured, pending map[string]any, cluster string) int64 {
	shares := obj.GetAnnotations()[schemas.AnnotationClusterReplicas]
	if v, ok := pending[schemas.AnnotationClusterReplicas]; ok {
		shares, _ = v.(string)
	}
	for part := range strings.SplitSeq(shares, ",") {
		if name, n, ok := strings.Cut(part, "="); ok && name == cluster {
			share, err := strconv.ParseInt(n, 10, 64)
			if err == nil && share > 0 {
				return share
			}
		}
	}
	return 0
}

// describes reports whether a ResourceInterface describes obj's kind, in its version or another.
func (s *StatusWriter) describes(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.ris.Lookup(gvk); ok {
		return true
	}
	_, ok := s.ris.LookupOtherVersion(gvk)
	return ok
}

// phaseOf maps p's status through obj's RI (Undefined without one), and warns when the workload newly failed;
// pending are the annotations about to be written with it.
// A status from a cluster that runs a Divide share is mapped against that share, as the copy there has it: a
// rule comparing ready replicas with spec.replicas would otherwise never see the copy ready.
func (s *StatusWriter) phaseOf(obj *unstructured.Unstructured, p *schemas.WorkloadStatus, pending map[string]any) karta.Phase {
	withStatus := obj.DeepCopy()
	delete(withStatus.Object, "status")
	s.mu.RLock()
	ri, ok := s.ris.Lookup(withStatus.GroupVersionKind())
	s.mu.RUnlock()
	if !ok {
		return karta.PhaseUndefined
	}
	log := s.Log.With("workload", p.Workload.Key(), "cluster", p.Cluster, "ri", ri.Name)
	if share := shownShare(obj, pending, p.Cluster); share > 0 {
		if err := withShare(ri, withStatus.Object, share); err != nil {
			log.Warn("cannot read the cluster's share of replicas; its status is mapped against the whole workload", "error", err)
		}
	}
	if p.Status != nil {
		withStatus.Object["status"] = p.Status
	}
	phase, err := ri.Phase(withStatus.Object)
	if err != nil {
		log.Warn("status mapping failed", "error", err)
		return karta.PhaseUndefined
	}
	if phase == karta.PhaseFailed && obj.GetAnnotations()[schemas.AnnotationPhase] != string(karta.PhaseFailed) {
		log.Warn("workload failed in its cluster")
	}
	return phase
}

// withShare sets, in obj, the replicas of the first component ri can divide to share, as a Divide's copy has it.
func withShare(ri *karta.Compiled, obj map[string]any, share int64) error {
	analysis, err := ri.Analyze(obj)
	if err != nil {
		return err
	}
	for _, c := range analysis.Components {
		if c.Scalable && len(c.ReplicasFieldPath) > 0 {
			return unstructured.SetNestedField(obj, share, c.ReplicasFieldPath...)
		}
	}
	return fmt.Errorf("%s: no component has a plain replicas path", ri.Name)
}

// annotateVerdict shows a verdict on the workload, unless the workload already shows a newer one: verdicts
// can be handled out of order, when one is retried after a failed write while the next went through, or
// when status writers share the work.
func (s *StatusWriter) annotateVerdict(ctx context.Context, p *schemas.PlacementVerdict) error {
	ctx = withShownVerdict(ctx, p)
	return s.withCurrent(ctx, p.Workload, func(client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		return s.showVerdict(ctx, client, obj, p)
	})
}

func (s *StatusWriter) showVerdict(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	p *schemas.PlacementVerdict) error {
	place := contract.StreamPlace{Epoch: p.Epoch, Seq: p.Sequence}
	if _, shown := obj.GetAnnotations()[schemas.AnnotationPlacement]; !shown {
		if p.Status == schemas.VerdictNoPolicy {
			// An object no policy selects, and never did, is not fleetflow's: it is left as it is (a Duplicate
			// policy for some ConfigMaps would otherwise mark every ConfigMap of the control plane). The verdict
			// is in the streams for the audit. One that was selected before shows that it no longer is.
			s.rememberUnshown(p.Workload.UID, place.Mark())
			return nil
		}
		if s.unshownAfter(p.Workload.UID, place) {
			s.Log.Info("verdict older than a NoPolicy one not shown; not shown", "workload", p.Workload.Key(),
				"verdict_sequence", place.Mark())
			return nil
		}
		if s.LastVerdict != nil {
			last, err := s.LastVerdict(ctx, schemas.VerdictSubject(p.Workload))
			if err != nil {
				return err
			}
			if last != nil && last.Status == schemas.VerdictNoPolicy && last.Workload.UID == p.Workload.UID &&
				place.Before(contract.StreamPlace{Epoch: last.Epoch, Seq: last.Sequence}.Mark()) {
				s.Log.Info("verdict older than a NoPolicy one not shown; not shown", "workload", p.Workload.Key(),
					"verdict_sequence", place.Mark())
				return nil
			}
		}
	}
	if shown := obj.GetAnnotations()[schemas.AnnotationVerdictSequence]; place.Before(shown) {
		s.Log.Info("verdict older than the one shown; not shown", "workload", p.Workload.Key(),
			"verdict_sequence", place.Mark(), "shown_sequence", shown)
		return nil
	}
	annotations := map[string]any{
		schemas.AnnotationPlacement:       string(p.Status),
		schemas.AnnotationPolicy:          nilIfEmpty(p.Policy),
		schemas.AnnotationReasons:         nil,
		schemas.AnnotationVerdictSequence: place.Mark(),
		schemas.AnnotationClusterPhases:   nil,
	}
	if p.Status == schemas.VerdictPlaced {
		annotations[schemas.AnnotationCluster] = strings.Join(p.Clusters, ",")
		annotations[schemas.AnnotationClusterReplicas] = nilIfEmpty(clusterReplicas(p))
	}
	// For a placed workload the reasons say why the other clusters were passed over.
	annotations[schemas.AnnotationReasons] = nilIfEmpty(reasonsAnnotation(p))
	if running := clustersOf(obj); p.Status != schemas.VerdictPlaced && len(running) > 0 && s.LastStatus != nil {
		// The verdict leaves the copies where they run (and the shown clusters as they are; a spread's phases and
		// status still shown together), but for one reported gone while a Placed verdict was shown: its Gone was
		// handled before this verdict, and a copy that went does not keep running.
		return s.showCopies(ctx, client, obj, running, annotations)
	}
	newShares := obj.GetAnnotations()[schemas.AnnotationClusterReplicas] != clusterReplicas(p)
	placedAnew := p.Status == schemas.VerdictPlaced && (!slices.Equal(shownClusters(obj), p.Clusters) || newShares)
	if p.Status == schemas.VerdictPlaced && len(p.Clusters) > 1 && !placedAnew {
		delete(annotations, schemas.AnnotationClusterPhases) // the same spread (with new reasons): its phases stand
	}
	if placedAnew && s.LastStatus != nil {
		// Newly placed: the status shown comes from its clusters from now on, and one of theirs may have been
		// handled before this verdict. New Divide shares judge each cluster's status anew.
		if len(p.Clusters) > 1 {
			return s.showSpreadStatus(ctx, client, obj, p.Clusters, nil, annotations)
		}
		for _, cluster := range p.Clusters {
			status, err := s.LastStatus(ctx, schemas.WorkloadStatusSubject(cluster, p.Workload))
			if err != nil {
				return err
			}
			if status != nil && !status.Gone && status.Workload.UID == p.Workload.UID {
				return s.showStatus(ctx, client, obj, status, annotations)
			}
		}
		if obj.GetAnnotations()[schemas.AnnotationClusterPhases] != "" {
			// A spread now placed on a cluster that has not reported: its phase was the least of copies no
			// longer shown, and its status one of theirs.
			annotations[schemas.AnnotationPhase] = nil
			var err error
			if obj, err = s.clearStatus(ctx, client, obj); err != nil {
				return err
			}
		}
	}
	return s.annotateObject(ctx, client, obj, p.Workload, annotations)
}

// forgetCopy stops showing cluster once the copy of ref there was deleted (by the applier, or reported gone
// from its cluster), when no Placed verdict shows it: a workload that turned Unschedulable keeps showing where
// it still runs, until its copy there goes (its Cluster was deleted, say). With no cluster left, its phase and
// status, which told of that copy, go too.
func (s *StatusWriter) forgetCopy(ctx context.Context, ref schemas.ObjectRef, cluster string) error {
	return s.withCurrent(ctx, ref, func(client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		a := obj.GetAnnotations()
		if a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced) || a[schemas.AnnotationCluster] == "" {
			return nil
		}
		shown := strings.Split(a[schemas.AnnotationCluster], ",")
		if !slices.Contains(shown, cluster) {
			return nil
		}
		left := slices.DeleteFunc(shown, func(c string) bool { return c == cluster })
		return s.showCopies(ctx, client, obj, left, map[string]any{})
	})
}

// showCopies shows obj, which no Placed verdict shows, on clusters, where its copies still run (but for those
// their cluster reported gone), together with annotations: their shares, phases and status as copyStatus shows
// them (a spread's taken together), taken anew so that none is of a copy that went; with no cluster left, no
// phase and no status.
func (s *StatusWriter) showCopies(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	clusters []string, annotations map[string]any) error {
	ref := schemas.RefOf(obj.Object)
	if s.LastStatus != nil {
		var err error
		if clusters, err = s.withoutGoneCopies(ctx, ref, clusters); err != nil {
			return err
		}
	}
	annotations[schemas.AnnotationCluster] = nilIfEmpty(strings.Join(clusters, ","))
	shares := obj.GetAnnotations()[schemas.AnnotationClusterReplicas]
	annotations[schemas.AnnotationClusterReplicas] = nilIfEmpty(sharesOn(shares, clusters))
	switch {
	case len(clusters) > 1 && s.LastStatus != nil:
		return s.showSpreadStatus(ctx, client, obj, clusters, nil, annotations)
	case len(clusters) > 1:
		// Without the events stream the other copies' statuses cannot be read: the spread is shown as it was.
		return s.annotateObject(ctx, client, obj, ref, annotations)
	case len(clusters) == 1 && s.LastStatus != nil:
		status, err := s.LastStatus(ctx, schemas.WorkloadStatusSubject(clusters[0], ref))
		if err != nil {
			return err
		}
		if status != nil && !status.Gone && status.Workload.UID == ref.UID {
			annotations[schemas.AnnotationClusterPhases] = nil
			return s.showStatus(ctx, client, obj, status, annotations)
		}
	}
	annotations[schemas.AnnotationClusterPhases] = nil
	if len(clusters) == 0 || obj.GetAnnotations()[schemas.AnnotationClusterPhases] != "" {
		// The phase shown told of copies no longer shown (a spread's is the least of its copies'), and the
		// status shown may be one of theirs.
		annotations[schemas.AnnotationPhase] = nil
		var err error
		if obj, err = s.clearStatus(ctx, client, obj); err != nil {
			return err
		}
	}
	return s.annotateObject(ctx, client, obj, ref, annotations)
}

// withoutGoneCopies are clusters but those whose last status on the events stream reports the copy of ref
// gone: a Gone handled while a Placed verdict was shown did not stop showing its cluster.
func (s *StatusWriter) withoutGoneCopies(ctx context.Context, ref schemas.ObjectRef, clusters []string) ([]string, error) {
	running := make([]string, 0, len(clusters))
	for _, cluster := range clusters {
		status, err := s.LastStatus(ctx, schemas.WorkloadStatusSubject(cluster, ref))
		if err != nil {
			return nil, err
		}
		if status == nil || !status.Gone || status.Workload.UID != ref.UID {
			running = append(running, cluster)
		}
	}
	return running, nil
}

// clearStatus empties obj's status, which told of a copy no longer shown, and returns obj as written.
func (s *StatusWriter) clearStatus(ctx context.Context, client dynamic.ResourceInterface,
	obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return s.writeStatus(ctx, client, obj, &schemas.WorkloadStatus{Workload: schemas.RefOf(obj.Object)})
}

// sharesOn is the part of AnnotationClusterReplicas shares that names clusters: the share of a copy that went
// is no longer shown, those of the others are still theirs.
func sharesOn(shares string, clusters []string) string {
	var kept []string
	for part := range strings.SplitSeq(shares, ",") {
		if name, _, ok := strings.Cut(part, "="); ok && slices.Contains(clusters, name) {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, ",")
}

// clearPlacementError removes the placement error shown once the cluster it names carried out a decision: a
// success on another cluster of a spread says nothing about it.
func (s *StatusWriter) clearPlacementError(ctx context.Context, p *schemas.PlacementApplied) error {
	return s.withCurrent(ctx, p.Workload, func(client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		shown, ok := obj.GetAnnotations()[schemas.AnnotationPlacementError]
		if !ok || !strings.Contains(shown, " on "+p.Cluster+": ") {
			return nil
		}
		return s.annotateObject(ctx, client, obj, p.Workload, map[string]any{schemas.AnnotationPlacementError: nil})
	})
}

// showApplied records, on the workload's WorkloadPlacement, the Apply an applier carried out, and the Event
// Applied when it is news there (not when the report is delivered again, or replayed). The Apply's verdict comes
// on the writer's other consumer: the report waits for it to be shown, so the Events come in the order things
// happened, but not past its second-to-last attempt (a lagging consumer costs the order, not the Event).
func (s *StatusWriter) showApplied(ctx context.Context, p *schemas.PlacementApplied, attempt uint64) error {
	if p.Action != schemas.ActionApply {
		return nil
	}
	return s.withCurrent(ctx, p.Workload, func(_ dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		if !slices.Contains(clustersOf(obj), p.Cluster) && attempt < schemas.MaxDeliver-1 {
			if obj.GetAnnotations()[schemas.AnnotationPlacement] == "" ||
				!shownSince(obj.GetAnnotations()[schemas.AnnotationVerdictSequence], p.Sequence) {
				// The verdict this Apply carries out comes on the other consumer: its Event follows the verdict's.
				return fmt.Errorf("the Apply of %s on %s waits for its verdict to be shown", p.Workload, p.Cluster)
			}
			return nil // a later verdict is shown: the workload no longer runs there
		}
		news, err := s.syncPlacement(ctx, obj, nil, p)
		if err == nil && news {
			s.record(workloadReference(p.Workload), appliedEvent(p))
		}
		return err
	})
}

// shownSince reports whether the verdict shown at mark (AnnotationVerdictSequence) is of sequence seq or later.
// A decision's sequence is its verdict's.
func shownSince(mark string, seq uint64) bool {
	shown, err := strconv.ParseUint(mark[strings.LastIndex(mark, "/")+1:], 10, 64)
	return err == nil && shown >= seq
}

// annotate merge-patches annotations (nil removes one) onto the control-plane object, if it still exists.
func (s *StatusWriter) annotate(ctx context.Context, ref schemas.ObjectRef, annotations map[string]any) error {
	return s.withCurrent(ctx, ref, func(client dynamic.ResourceInterface, obj *unstructured.Unstructured) error {
		return s.annotateObject(ctx, client, obj, ref, annotations)
	})
}

// annotateObject patches annotations onto obj, already read, unless it carries them already. The patch holds
// obj's resourceVersion: a change since (a newer verdict or status shown by the writer's other consumer, or
// another writer) makes it errStale, so what to show is decided again.
func (s *StatusWriter) annotateObject(ctx context.Context, client dynamic.ResourceInterface, obj *unstructured.Unstructured,
	ref schemas.ObjectRef, annotations map[string]any) error {
	existing := obj.GetAnnotations()
	changed := false
	for k, v := range annotations {
		old, has := existing[k]
		if (v == nil && has) || (v != nil && (!has || old != v)) {
			changed = true
		}
	}
	if !changed {
		// Shown already; its WorkloadPlacement may not be (a write of it failed, or it came after the workload's).
		_, err := s.syncPlacement(ctx, obj, shownVerdict(ctx), nil)
		return err
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": ref.UID, "resourceVersion": obj.GetResourceVersion(), "annotations": annotations,
	}})
	if err != nil {
		return bus.Permanent(err)
	}
	updated, err := client.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: schemas.ManagedByFleetflow})
	switch {
	case err == nil:
		// Recorded once the change is shown: a redelivery finds it shown, and records nothing again.
		for _, e := range workloadEvents(existing, updated.GetAnnotations(), shownVerdict(ctx)) {
			s.record(workloadReference(ref), e)
		}
		if err := s.keepObserved(ctx, client, obj, updated); err != nil {
			return err
		}
		_, err := s.syncPlacement(ctx, updated, shownVerdict(ctx), nil)
		return err
	case apierrors.IsNotFound(err):
		return nil
	case isStale(err):
		return errStale
	default:
		return contract.Classify(fmt.Errorf("annotate %s on the control plane: %w", ref, err))
	}
}

// keepObserved keeps a workload shown observed (status.observedGeneration at its generation) so once
// fleetflow's annotations moved its generation: a Deployment counts changes to its annotations as
// generations, and its spec, all its controller acts on, did not change.
func (s *StatusWriter) keepObserved(ctx context.Context, client dynamic.ResourceInterface, before, after *unstructured.Unstructured) error {
	observed, found, _ := unstructured.NestedInt64(before.Object, "status", "observedGeneration")
	if !found || observed != before.GetGeneration() || after.GetGeneration() <= observed {
		return nil
	}
	next := after.DeepCopy()
	if err := unstructured.SetNestedField(next.Object, after.GetGeneration(), "status", "observedGeneration"); err != nil {
		return bus.Permanent(err)
	}
	_, err := client.UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: schemas.ManagedByFleetflow})
	switch {
	case err == nil, apierrors.IsNotFound(err), apierrors.IsInvalid(err):
		return nil
	case isStale(err):
		return errStale
	default:
		return contract.Classify(fmt.Errorf("keep the status of %s observed on the control plane: %w", schemas.RefOf(after.Object), err))
	}
}

// sameJSON tells whether two decoded JSON values encode alike: the control plane's decoder gives integers as
// int64 where an event's gives float64.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
