package consumers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/placement/karta"
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

	mu       sync.RWMutex
	ris      *karta.Registry
	clusters map[string]*clusterView
}

// NewStatusWriter starts with the given RIs (normally the built-ins); RI events update them.
func NewStatusWriter(controlPlane *kube.Clients, ris *karta.Registry, log *slog.Logger) *StatusWriter {
	return &StatusWriter{ControlPlane: controlPlane, ris: ris, Log: log}
}

// Handle is the bus.Handler of the status writer's consumer.
func (s *StatusWriter) Handle(ctx context.Context, d bus.Delivery) error {
	if handled, err := s.handleFleet(ctx, d); handled {
		return err
	}
	switch p := d.Payload.(type) {
	case *schemas.WorkloadStatus:
		if s.Superseded != nil {
			superseded, err := s.Superseded(ctx, d.Subject, d.StreamSequence)
			if err != nil {
				return fmt.Errorf("status of %s from %s: %w", p.Workload, p.Cluster, err)
			}
			if superseded {
				s.Log.Debug("status superseded by a newer one; not copied", "workload", p.Workload.Key(),
					"cluster", p.Cluster, "stream_seq", d.StreamSequence)
				return nil
			}
		}
		return s.copyStatus(ctx, p)
	case *schemas.PlacementVerdict:
		return s.annotateVerdict(ctx, p)
	case *schemas.PlacementDecided:
		if p.Verdict == nil {
			return nil
		}
		return s.annotateVerdict(ctx, p.Verdict)
	case *schemas.PlacementFailed:
		return s.annotate(ctx, p.Workload, map[string]any{
			schemas.AnnotationPlacementError: fmt.Sprintf("%s on %s: %s", p.Action, p.Cluster, p.Error),
		})
	case *schemas.PlacementApplied:
		return s.annotate(ctx, p.Workload, map[string]any{schemas.AnnotationPlacementError: nil})
	case *schemas.ObjectChanged:
		if d.Event.Type() == schemas.TypeResourceInterfaceChanged {
			s.upsertRI(p)
		}
		return nil
	case *schemas.ObjectDeleted:
		if d.Event.Type() == schemas.TypeResourceInterfaceDeleted {
			s.mu.Lock()
			s.ris = s.ris.Without(p.Workload.Name)
			s.mu.Unlock()
		}
		return nil
	default:
		return nil
	}
}

func (s *StatusWriter) upsertRI(p *schemas.ObjectChanged) {
	data, err := json.Marshal(p.Object)
	if err != nil {
		return
	}
	ris, err := karta.ParseResourceInterfaces(data, "ResourceInterface "+p.Ref().Name)
	if err != nil || len(ris) != 1 {
		s.Log.Warn("ignoring ResourceInterface that does not parse", "ri", p.Ref().Name, "error", err)
		return
	}
	compiled, err := karta.Compile(ris[0], "ResourceInterface "+p.Ref().Name)
	if err != nil {
		s.Log.Warn("ignoring ResourceInterface that does not compile", "ri", p.Ref().Name, "error", err)
		return
	}
	s.mu.Lock()
	s.ris = s.ris.With(compiled)
	s.mu.Unlock()
}

func (s *StatusWriter) resource(ref schemas.ObjectRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, bus.Permanent(fmt.Errorf("workload %s: apiVersion: %w", ref, err))
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gv.WithKind(ref.Kind))
	gvr, namespaced, err := s.ControlPlane.ResourceFor(obj)
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

func (s *StatusWriter) copyStatus(ctx context.Context, p *schemas.WorkloadStatus) error {
	if p.Gone {
		return nil
	}
	client, obj, err := s.current(ctx, p.Workload)
	if err != nil || obj == nil {
		return err
	}
	log := s.Log.With("workload", p.Workload.Key(), "cluster", p.Cluster)
	// Once a verdict shows where the workload is placed, it alone names the clusters: a spread keeps its list,
	// and a status from the cluster a workload is moving off does not name it again. The status itself is
	// copied all the same: verdicts carried by decisions are read from another stream, so the verdict of a
	// move can be shown after the first status from its new cluster is handled.
	placed := obj.GetAnnotations()[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced)
	if p.Status != nil {
		patch, err := json.Marshal(map[string]any{"status": p.Status})
		if err != nil {
			return bus.Permanent(err)
		}
		_, err = client.Patch(ctx, p.Workload.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}, "status")
		switch {
		case apierrors.IsNotFound(err):
			// The CRD has no status subresource: the phase annotation below still tells the story.
			log.Debug("workload kind has no status subresource; status not copied")
		case err != nil:
			return classify(fmt.Errorf("copy status of %s from %s: %w", p.Workload, p.Cluster, err))
		}
	}
	phase := karta.PhaseUndefined
	withStatus := obj.DeepCopy()
	if p.Status != nil {
		withStatus.Object["status"] = p.Status
	}
	s.mu.RLock()
	ri, ok := s.ris.Lookup(withStatus.GroupVersionKind())
	s.mu.RUnlock()
	if ok {
		if phase, err = ri.Phase(withStatus.Object); err != nil {
			log.Warn("status mapping failed", "ri", ri.Name, "error", err)
			phase = karta.PhaseUndefined
		}
	}
	if phase == karta.PhaseFailed && obj.GetAnnotations()[schemas.AnnotationPhase] != string(karta.PhaseFailed) {
		log.Warn("workload failed in its cluster", "ri", ri.Name)
	}
	// The status patch left the annotations as they were read, so the object read above still serves.
	update := map[string]any{schemas.AnnotationPhase: string(phase)}
	if !placed {
		update[schemas.AnnotationCluster] = p.Cluster
	}
	return s.annotateObject(ctx, client, obj, p.Workload, update)
}

// annotateVerdict shows a verdict on the workload, unless the workload already shows a newer one: verdicts
// can be handled out of order, when one is retried after a failed write while the next went through, or
// when status writers share the work.
func (s *StatusWriter) annotateVerdict(ctx context.Context, p *schemas.PlacementVerdict) error {
	client, obj, err := s.current(ctx, p.Workload)
	if err != nil || obj == nil {
		return err
	}
	place := streamPlace{epoch: p.Epoch, seq: p.Sequence}
	if shown := obj.GetAnnotations()[schemas.AnnotationVerdictSequence]; place.before(shown) {
		s.Log.Info("verdict older than the one shown; not shown", "workload", p.Workload.Key(),
			"verdict_sequence", place.mark(), "shown_sequence", shown)
		return nil
	}
	annotations := map[string]any{
		schemas.AnnotationPlacement:       string(p.Status),
		schemas.AnnotationPolicy:          nilIfEmpty(p.Policy),
		schemas.AnnotationReasons:         nil,
		schemas.AnnotationVerdictSequence: place.mark(),
	}
	if p.Status == schemas.VerdictPlaced {
		annotations[schemas.AnnotationCluster] = strings.Join(p.Clusters, ",")
	}
	// For a placed workload the reasons say why the other clusters were passed over.
	var lines []string
	if p.Message != "" {
		lines = append(lines, p.Message)
	}
	clusters := make([]string, 0, len(p.Reasons))
	for c := range p.Reasons {
		clusters = append(clusters, c)
	}
	slices.Sort(clusters)
	for _, c := range clusters {
		lines = append(lines, c+": "+p.Reasons[c])
	}
	annotations[schemas.AnnotationReasons] = nilIfEmpty(strings.Join(lines, "\n"))
	return s.annotateObject(ctx, client, obj, p.Workload, annotations)
}

// annotate merge-patches annotations (nil removes one) onto the control-plane object, if it still exists.
func (s *StatusWriter) annotate(ctx context.Context, ref schemas.ObjectRef, annotations map[string]any) error {
	client, obj, err := s.current(ctx, ref)
	if err != nil || obj == nil {
		return err
	}
	return s.annotateObject(ctx, client, obj, ref, annotations)
}

// annotateObject patches annotations onto obj, already read, unless it carries them already.
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
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": ref.UID, "annotations": annotations,
	}})
	if err != nil {
		return bus.Permanent(err)
	}
	if _, err := client.Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or replaced by another incarnation (the uid precondition failed)
		}
		return classify(fmt.Errorf("annotate %s on the control plane: %w", ref, err))
	}
	return nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
