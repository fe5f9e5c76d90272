package applier

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetflow/fleetflow/consumers/internal/contract"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// Labels and annotations that tie a copied object to its control-plane workload.
const (
	FieldManager = schemas.ManagedByFleetflow
	// LabelManagedBy marks objects fleetflow created; the applier never deletes or overwrites others.
	LabelManagedBy = schemas.LabelManagedBy
	// LabelWorkloadUID is the uid of the control-plane workload the object copies.
	LabelWorkloadUID = schemas.LabelWorkloadUID
	// AnnotationDecisionSequence is the per-workload sequence of the decision last applied, so a stale
	// decision redelivered after a newer one (or seen by another applier replica) is skipped.
	AnnotationDecisionSequence = "fleetflow.io/decision-sequence"
)

// Applier carries out the decisions for one workload cluster.
type Applier struct {
	Cluster   string
	Clients   *kube.Clients
	Publisher *bus.Publisher
	Log       *slog.Logger
	// Superseded, when set, reports whether the decisions stream holds a message on subject after sequence
	// seq: a newer decision for the same workload on this cluster, which makes an Apply at seq stale. The
	// object's own record of the last decision applied cannot tell once the object is gone: an Apply retried
	// after a later Delete was carried out would bring back the copy of a deleted workload.
	Superseded func(ctx context.Context, subject string, seq uint64) (bool, error)
	// Latest, when set, returns the newest decision on subject in the decisions stream and its stream
	// sequence (nil when it holds none). Replicas of an applier share its consumer, so a newer decision for a
	// workload may be carried out by another replica while this one applies an older one: a Delete that found
	// nothing yet, then this Apply bringing back the copy of a deleted workload; or a newer Apply, then this
	// one writing the older content over it, or a late Delete removing it. After each decision the applier
	// therefore carries out the newest one too, when one came meanwhile.
	Latest func(ctx context.Context, subject string) (*schemas.PlacementDecided, uint64, error)
}

// Handle is the bus.Handler of the applier's consumer.
func (a *Applier) Handle(ctx context.Context, d bus.Delivery) error {
	decided, ok := d.Payload.(*schemas.PlacementDecided)
	if !ok {
		return bus.Permanent(fmt.Errorf("applier does not handle event type %s", d.Event.Type()))
	}
	if decided.Cluster != a.Cluster {
		return bus.Permanent(fmt.Errorf("decision %s is for cluster %q, this applier serves %q",
			decided.DecisionID, decided.Cluster, a.Cluster))
	}
	log := a.Log.With("workload", decided.Workload.Key(), "decision", decided.DecisionID, "action", decided.Action)
	if decided.Action == schemas.ActionApply && a.Superseded != nil {
		// Only an Apply: a Delete followed by an Apply of a workload created again under the same name must
		// still remove the old copy, so the new one starts from nothing rather than from the old one's status.
		superseded, err := a.Superseded(ctx, d.Subject, d.StreamSequence)
		if err != nil {
			return err
		}
		if superseded {
			// The newer decision is carried out and reported in its turn.
			log.Info("skipping an Apply superseded by a newer decision for the same workload on this cluster")
			observe.ApplierOperations.WithLabelValues(a.Cluster, string(decided.Action), "superseded").Inc()
			return nil
		}
	}
	var rv string
	var err error
	switch decided.Action {
	case schemas.ActionApply:
		rv, err = a.apply(ctx, decided)
	case schemas.ActionDelete:
		var kept bool
		if kept, err = a.keptByNewerApply(ctx, d.Subject, d.StreamSequence, decided); err == nil && !kept {
			err = a.delete(ctx, decided)
		} else if kept {
			// Deleted and applied again by catchUp, a running job would start over for nothing.
			log.Info("not deleting: a newer Apply of the same workload on this cluster came meanwhile; carrying it out instead")
		}
	}
	if err == nil {
		err = a.catchUp(ctx, d.Subject, d.StreamSequence, log)
	}
	if err != nil {
		observe.ApplierOperations.WithLabelValues(a.Cluster, string(decided.Action), "failed").Inc()
		return err
	}
	observe.ApplierOperations.WithLabelValues(a.Cluster, string(decided.Action), "ok").Inc()
	if at := d.Event.Time(); !at.IsZero() {
		observe.PlacedToAppliedSeconds.WithLabelValues(a.Cluster, string(decided.Action)).Observe(max(0, time.Since(at).Seconds()))
	}
	log.Info("decision carried out", "resource_version", rv)
	if err := a.report(ctx, schemas.TypePlacementApplied, "applied", appliedReport(decided, a.Cluster, rv)); err != nil {
		return reportError{err: err, resourceVersion: rv}
	}
	return nil
}

// catchUp carries out, after a write for the decision at seq on subject, every newer decision the stream
// holds for it by then (see Latest). Whichever of this applier and the replica that handled the newer
// decision writes last, it writes the newer decision: a newer decision stored after this check is handled
// after this write. The newer decisions are reported by their own handling.
func (a *Applier) catchUp(ctx context.Context, subject string, seq uint64, log *slog.Logger) error {
	for a.Latest != nil {
		latest, latestSeq, err := a.Latest(ctx, subject)
		if err != nil {
			return fmt.Errorf("newest decision on %s: %w", subject, err)
		}
		if latest == nil || latestSeq <= seq || latest.Cluster != a.Cluster {
			return nil
		}
		log.Info("a newer decision came meanwhile; carrying it out too, as another replica may have before this one landed",
			"newer", latest.DecisionID, "newer_action", latest.Action)
		switch latest.Action {
		case schemas.ActionApply:
			_, err = a.apply(ctx, latest)
		case schemas.ActionDelete:
			err = a.delete(ctx, latest)
		}
		if err != nil {
			return err
		}
		seq = latestSeq
	}
	return nil
}

// keptByNewerApply reports whether the newest decision on subject, stored after the Delete at seq, is an Apply
// of the same workload (same uid) to this cluster: the copy is to stay, so the Delete is not carried out. An
// Apply of a workload created again under the name does not keep it: the earlier workload's copy must go first.
func (a *Applier) keptByNewerApply(ctx context.Context, subject string, seq uint64, decided *schemas.PlacementDecided) (bool, error) {
	if a.Latest == nil {
		return false, nil
	}
	latest, latestSeq, err := a.Latest(ctx, subject)
	if err != nil {
		return false, fmt.Errorf("newest decision on %s: %w", subject, err)
	}
	return latest != nil && latestSeq > seq && latest.Cluster == a.Cluster && latest.Action == schemas.ActionApply &&
		latest.Workload.UID == decided.Workload.UID, nil
}

func appliedReport(decided *schemas.PlacementDecided, cluster, resourceVersion string) *schemas.PlacementApplied {
	return &schemas.PlacementApplied{DecisionID: decided.DecisionID, Workload: decided.Workload, Cluster: cluster,
		Action: decided.Action, Sequence: decided.Sequence, ResourceVersion: resourceVersion}
}

// reportError is a decision carried out whose report could not be published.
type reportError struct {
	err             error
	resourceVersion string
}

func (r reportError) Error() string {
	return "decision carried out, but its report was not stored: " + r.err.Error()
}
func (r reportError) Unwrap() error { return r.err }

// GiveUp reports a decision the applier could not carry out, so it is never silently dropped. A decision
// carried out whose report could not be stored is reported applied: reported failed, it would make the placer
// move a workload (under rescheduleOnFailure) off a cluster that runs it.
func (a *Applier) GiveUp(ctx context.Context, d bus.Delivery, cause error) {
	decided, ok := d.Payload.(*schemas.PlacementDecided)
	if !ok {
		return
	}
	var unreported reportError
	if errors.As(cause, &unreported) {
		if err := a.report(ctx, schemas.TypePlacementApplied, "applied", appliedReport(decided, a.Cluster, unreported.resourceVersion)); err != nil {
			a.Log.Error("could not report a decision carried out", "workload", decided.Workload.Key(), "error", err)
		}
		return
	}
	err := a.report(ctx, schemas.TypePlacementFailed, "failed", &schemas.PlacementFailed{
		DecisionID: decided.DecisionID, Workload: decided.Workload, Cluster: a.Cluster,
		Action: decided.Action, Sequence: decided.Sequence, Error: schemas.ShortenError(cause.Error()), Attempts: int(d.Attempt),
	})
	if err != nil {
		a.Log.Error("could not report failed placement", "workload", decided.Workload.Key(), "error", err, "cause", cause)
	}
}

func (a *Applier) resource(ref schemas.ObjectRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("workload %s: apiVersion %q: %w", ref, ref.APIVersion, err))
	}
	mapping, err := a.Clients.Mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		if kube.IsNoMatch(err) {
			// The CRD may be installed any moment (level 1 copies frameworks); retry with a fresh discovery.
			a.Clients.RefreshMapper()
			return nil, fmt.Errorf("kind %s is not served by cluster %s (CRD missing?): %w", ref.Kind, a.Cluster, err)
		}
		return nil, fmt.Errorf("resolve %s on cluster %s: %w", ref.Kind, a.Cluster, err)
	}
	return a.Clients.Dynamic.Resource(mapping.Resource).Namespace(ref.Namespace), nil
}

func (a *Applier) apply(ctx context.Context, decided *schemas.PlacementDecided) (string, error) {
	ref := decided.Workload
	client, err := a.resource(ref)
	if err != nil {
		return "", err
	}
	existing, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return "", contract.Classify(fmt.Errorf("read %s on cluster %s: %w", ref, a.Cluster, err))
	}
	if existing != nil {
		if err := a.checkOwnership(existing, ref); err != nil {
			return "", err
		}
		if existing.GetDeletionTimestamp() != nil {
			// Applying to a copy that is being deleted succeeds, and the copy still goes once its finalizers
			// are done: the decision would be reported carried out and lost. It is retried until the copy is gone.
			return "", fmt.Errorf("%s on cluster %s is being deleted (finalizers %v); applying once it is gone",
				ref, a.Cluster, existing.GetFinalizers())
		}
		if owner := existing.GetLabels()[LabelWorkloadUID]; owner != "" && owner != ref.UID {
			// The copy of an earlier workload of this name (this Apply is the newest decision for the name on this
			// cluster): its Delete has not run yet (it waits for a retry, or was given up while the cluster was
			// down). The new workload must not start from the old one's object and status, so the old copy goes
			// first.
			return "", a.replaceEarlierCopy(ctx, client, existing, ref, owner)
		}
		if stale(existing, decided) {
			a.Log.Info("skipping stale decision", "workload", ref.Key(), "sequence", decided.Sequence,
				"applied", existing.GetAnnotations()[AnnotationDecisionSequence])
			return existing.GetResourceVersion(), nil
		}
	}
	if ref.Namespace != "" {
		labels := maps.Clone(decided.NamespaceLabels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[LabelManagedBy] = FieldManager
		err := a.Clients.EnsureLabeledNamespace(ctx, ref.Namespace, FieldManager, labels, createdForCopies)
		var relabel *kube.RelabelError
		switch {
		case errors.As(err, &relabel):
			// The namespace is there: the copy still goes in, and the next Apply into it tries the labels again.
			a.Log.Warn("could not bring the labels of the copy's namespace up to date", "workload", ref.Key(),
				"cluster", a.Cluster, "error", err)
		case err != nil:
			return "", contract.Classify(fmt.Errorf("cluster %s: %w", a.Cluster, err))
		}
	}
	desired := &unstructured.Unstructured{Object: objects.SanitizeForCopy(decided.Object)}
	labels := desired.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = FieldManager
	labels[LabelWorkloadUID] = ref.UID
	desired.SetLabels(labels)
	annotations := desired.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[AnnotationDecisionSequence] = SequenceAnnotation(decided)
	if generation := objects.GenerationOf(decided.Object); generation > 0 {
		annotations[schemas.AnnotationSourceGeneration] = strconv.FormatInt(generation, 10)
	}
	annotations[schemas.AnnotationSourceContent] = decided.SourceContent
	if decided.SourceContent == "" {
		annotations[schemas.AnnotationSourceContent] = objects.ContentOf(decided.Object)
	}
	if decided.Pins != "" {
		annotations[schemas.AnnotationPins] = decided.Pins
	}
	desired.SetAnnotations(annotations)
	applied, err := client.Apply(ctx, ref.Name, desired, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return "", contract.Classify(fmt.Errorf("server-side apply %s on cluster %s: %w", ref, a.Cluster, err))
	}
	return applied.GetResourceVersion(), nil
}

// createdForCopies reports whether an applier created the namespace for the copies it holds, so it carries the
// control-plane namespace's labels. Not so for one fleetflow did not create, nor for the copy of a control-plane
// Namespace (a Duplicate spreads it), whose own Apply sets its labels.
func createdForCopies(ns *corev1.Namespace) bool {
	return ns.Labels[LabelManagedBy] == FieldManager && ns.Labels[LabelWorkloadUID] == ""
}

// replaceEarlierCopy deletes the copy of an earlier workload of the same name and returns the retryable error
// that makes the Apply come again once it is gone.
func (a *Applier) replaceEarlierCopy(ctx context.Context, client dynamic.ResourceInterface, existing *unstructured.Unstructured,
	ref schemas.ObjectRef, earlierUID string) error {
	a.Log.Info("deleting the copy of an earlier workload of the same name before applying", "workload", ref.Key(),
		"cluster", a.Cluster, "earlier_uid", earlierUID, "uid", ref.UID)
	if err := a.deleteCopy(ctx, client, existing, ref); err != nil {
		return err
	}
	return fmt.Errorf("%s on cluster %s is the copy of an earlier workload of this name (uid %s), deleted; applying once it is gone",
		ref, a.Cluster, earlierUID)
}

// deleteCopy deletes a copy found on the cluster, the very object read (uid precondition), and what it owns
// in the background: some kinds' default (batch/v1 Jobs) orphans their pods.
func (a *Applier) deleteCopy(ctx context.Context, client dynamic.ResourceInterface, existing *unstructured.Unstructured, ref schemas.ObjectRef) error {
	uid := existing.GetUID()
	background := metav1.DeletePropagationBackground
	err := client.Delete(ctx, existing.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return contract.Classify(fmt.Errorf("delete %s on cluster %s: %w", ref, a.Cluster, err))
	}
	return nil
}

func (a *Applier) delete(ctx context.Context, decided *schemas.PlacementDecided) error {
	ref := decided.Workload
	client, err := a.resource(ref)
	if kube.IsNoMatch(err) {
		// Discovery may be behind (another replica of this applier applied the copy after the kind was
		// installed), or the cluster may no longer serve the version the copy was applied in while it serves
		// another, which addresses the same stored object. Only a kind the cluster does not serve at all, by
		// fresh discovery, has nothing to delete.
		// An apiserver starting up serves its CRDs' kinds only once it has read them: its copies are still there,
		// and taken for gone they would run on two clusters. Ready first, so the discovery that follows is one of
		// an apiserver done starting.
		if ready := a.Clients.Ready(ctx); ready != nil {
			return fmt.Errorf("cannot tell whether cluster %s serves %s: %w", a.Cluster, ref.Kind, ready)
		}
		client, err = a.resourceInAnyVersion(ref)
		if kube.IsNoMatch(err) {
			a.Log.Info("nothing to delete: the cluster does not serve the kind", "workload", ref.Key(), "cluster", a.Cluster)
			return nil
		}
	}
	if err != nil {
		return err
	}
	existing, err := client.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return contract.Classify(fmt.Errorf("read %s on cluster %s: %w", ref, a.Cluster, err))
	}
	if existing.GetLabels()[LabelWorkloadUID] != ref.UID {
		// Another incarnation (same name, new uid) or a foreign object: not ours to delete.
		a.Log.Info("not deleting an object of another workload", "workload", ref.Key(),
			"found_uid", existing.GetLabels()[LabelWorkloadUID])
		return nil
	}
	if stale(existing, decided) {
		a.Log.Info("skipping stale delete", "workload", ref.Key(), "sequence", decided.Sequence,
			"applied", existing.GetAnnotations()[AnnotationDecisionSequence])
		return nil
	}
	return a.deleteCopy(ctx, client, existing, ref)
}

// resourceInAnyVersion resolves a workload's kind with fresh discovery, in the version it was applied in if
// the cluster still serves it, else in the cluster's preferred version of the kind.
func (a *Applier) resourceInAnyVersion(ref schemas.ObjectRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("workload %s: apiVersion %q: %w", ref, ref.APIVersion, err))
	}
	a.Clients.Mapper.Reset()
	gk := gv.WithKind(ref.Kind).GroupKind()
	mapping, err := a.Clients.Mapper.RESTMapping(gk, gv.Version)
	if kube.IsNoMatch(err) {
		mapping, err = a.Clients.Mapper.RESTMapping(gk)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s on cluster %s: %w", ref.Kind, a.Cluster, err)
	}
	return a.Clients.Dynamic.Resource(mapping.Resource).Namespace(ref.Namespace), nil
}

// checkOwnership refuses to overwrite an object fleetflow did not create. A copy that still carries the
// workload's UID label is fleetflow's even if someone removed its managed-by label: the apply puts it back,
// instead of the running job being given up on and started again elsewhere.
func (a *Applier) checkOwnership(existing *unstructured.Unstructured, ref schemas.ObjectRef) error {
	labels := existing.GetLabels()
	if labels[LabelManagedBy] == FieldManager || (ref.UID != "" && labels[LabelWorkloadUID] == ref.UID) {
		return nil
	}
	return bus.Permanent(fmt.Errorf("%s already exists on cluster %s and is not managed by fleetflow (label %s); refusing to overwrite it",
		ref, a.Cluster, LabelManagedBy))
}

// SequenceAnnotation is the AnnotationDecisionSequence a copy carries once d is applied: "<epoch>/<sequence>",
// or the sequence alone without an epoch.
func SequenceAnnotation(d *schemas.PlacementDecided) string {
	return contract.StreamPlace{Epoch: d.Epoch, Seq: d.Sequence}.Mark()
}

// stale reports whether obj already carries a decision newer than d from the same epoch.
func stale(obj *unstructured.Unstructured, d *schemas.PlacementDecided) bool {
	return contract.StreamPlace{Epoch: d.Epoch, Seq: d.Sequence}.Before(obj.GetAnnotations()[AnnotationDecisionSequence])
}

func (a *Applier) report(ctx context.Context, eventType, outcome string, payload schemas.Payload) error {
	var ref schemas.ObjectRef
	var decisionID string
	switch p := payload.(type) {
	case *schemas.PlacementApplied:
		ref, decisionID = p.Workload, p.DecisionID
	case *schemas.PlacementFailed:
		ref, decisionID = p.Workload, p.DecisionID
	}
	subject := schemas.PlacementSubject(a.Cluster, ref)
	event, err := codec.NewEvent(eventType, schemas.SourceApplier(a.Cluster), subject,
		schemas.PlacementOutcomeID(outcome, decisionID), payload)
	if err != nil {
		return bus.Permanent(err)
	}
	_, err = a.Publisher.Publish(ctx, subject, event)
	return err
}
