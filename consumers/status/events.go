package status

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/consumers/internal/contract"
	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// Event reasons, in the style of kube-scheduler and Karmada.
const (
	ReasonScheduled        = "Scheduled"
	ReasonFailedScheduling = "FailedScheduling"
	ReasonMoved            = "Moved"
	ReasonFailedOver       = "FailedOver"
	ReasonApplied          = "Applied"
	ReasonApplyFailed      = "ApplyFailed"
	ReasonClusterReady     = "Ready"
	ReasonClusterNotReady  = "NotReady"
	ReasonPolicyRejected   = "Rejected"
)

// Event actions (events.k8s.io/v1 requires one): what fleetflow was doing.
const (
	actionScheduling = "Scheduling"
	actionApplying   = "Applying"
	actionHeartbeat  = "Heartbeat"
	actionValidating = "Validating"
)

// maxNote is the longest note the events.k8s.io API takes.
const maxNote = 1024

// kubeEvent is one Event to record.
type kubeEvent struct {
	Type, Reason, Action, Note string
	// Cluster, when set, names the Cluster the Event is related to. It keeps apart the Events of one reason on
	// one workload for two clusters, which client-go's broadcaster would otherwise fold into one series (Applied
	// on cluster-b after Applied on cluster-a would count the first again, its note naming cluster-a).
	Cluster string
}

// record writes e on the object ref names, when the writer records Events.
func (s *StatusWriter) record(ref *corev1.ObjectReference, e kubeEvent) {
	if s.Events == nil {
		return
	}
	var related runtime.Object
	if e.Cluster != "" {
		related = &corev1.ObjectReference{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Cluster", Name: e.Cluster}
	}
	s.Events.Eventf(ref, related, e.Type, e.Reason, e.Action, "%s", shorten(e.Note, maxNote))
}

// objectReference is the reference an Event on obj carries.
func objectReference(obj *unstructured.Unstructured) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(),
		Name: obj.GetName(), UID: obj.GetUID(), ResourceVersion: obj.GetResourceVersion()}
}

// workloadReference is the reference an Event on the workload ref carries.
func workloadReference(ref schemas.ObjectRef) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
		UID: types.UID(ref.UID)}
}

// shownVerdictKey carries, in the context of a write, the verdict the write shows.
type shownVerdictKey struct{}

// withShownVerdict is ctx for the writes that show v: the write that lands says what changed, and v why.
func withShownVerdict(ctx context.Context, v *schemas.PlacementVerdict) context.Context {
	return context.WithValue(ctx, shownVerdictKey{}, v)
}

// shownVerdict is the verdict the write in ctx shows, nil when it shows none.
func shownVerdict(ctx context.Context) *schemas.PlacementVerdict {
	v, _ := ctx.Value(shownVerdictKey{}).(*schemas.PlacementVerdict)
	return v
}

// workloadEvents are the Events a change of a workload's annotations from before to after tells, v being the
// verdict the change shows (nil when it shows none). Only a change makes Events: a redelivered or replayed
// message finds the annotations as it would write them, and records nothing again.
func workloadEvents(before, after map[string]string, v *schemas.PlacementVerdict) []kubeEvent {
	var out []kubeEvent
	if v != nil && after[schemas.AnnotationVerdictSequence] != before[schemas.AnnotationVerdictSequence] &&
		after[schemas.AnnotationVerdictSequence] == (contract.StreamPlace{Epoch: v.Epoch, Seq: v.Sequence}).Mark() {
		out = append(out, verdictEvents(before, after, v)...)
	}
	if failed := after[schemas.AnnotationPlacementError]; failed != "" && failed != before[schemas.AnnotationPlacementError] {
		out = append(out, kubeEvent{Type: corev1.EventTypeWarning, Reason: ReasonApplyFailed, Action: actionApplying, Note: failed})
	}
	return out
}

// verdictEvents tell a newly shown verdict: where the workload was placed, or moved from where to where and
// why, or why it fits nowhere.
func verdictEvents(before, after map[string]string, v *schemas.PlacementVerdict) []kubeEvent {
	if v.Status != schemas.VerdictPlaced {
		return []kubeEvent{{Type: corev1.EventTypeWarning, Reason: ReasonFailedScheduling, Action: actionScheduling,
			Note: failedSchedulingNote(v)}}
	}
	was, now := splitList(before[schemas.AnnotationCluster]), splitList(after[schemas.AnnotationCluster])
	byPolicy := ""
	if v.Policy != "" {
		byPolicy = " by policy " + v.Policy
	}
	placed := strings.Join(now, ",")
	if shares := after[schemas.AnnotationClusterReplicas]; shares != "" {
		placed = shares
	}
	left := slices.DeleteFunc(slices.Clone(was), func(c string) bool { return slices.Contains(now, c) })
	added := slices.DeleteFunc(slices.Clone(now), func(c string) bool { return slices.Contains(was, c) })
	switch {
	case len(was) == 0:
		return []kubeEvent{{Type: corev1.EventTypeNormal, Reason: ReasonScheduled, Action: actionScheduling,
			Note: "Placed on " + placed + byPolicy}}
	case len(left) > 0:
		reason, kind := ReasonMoved, corev1.EventTypeNormal
		var why []string
		for _, c := range left {
			if v.ReasonCodes[c] == string(structs.RejectNotReady) {
				reason, kind = ReasonFailedOver, corev1.EventTypeWarning
			}
			if r := v.Reasons[c]; r != "" {
				why = append(why, c+" "+r)
			} else {
				why = append(why, c+" is no longer selected")
			}
		}
		verb := "Moved"
		if reason == ReasonFailedOver {
			verb = "Failed over"
		}
		return []kubeEvent{{Type: kind, Reason: reason, Action: actionScheduling,
			Note: fmt.Sprintf("%s from %s to %s%s: %s", verb, strings.Join(left, ","), placed, byPolicy, strings.Join(why, "; "))}}
	case len(added) > 0 || before[schemas.AnnotationClusterReplicas] != after[schemas.AnnotationClusterReplicas] ||
		before[schemas.AnnotationPlacement] != string(schemas.VerdictPlaced):
		return []kubeEvent{{Type: corev1.EventTypeNormal, Reason: ReasonScheduled, Action: actionScheduling,
			Note: "Placed on " + placed + byPolicy}}
	}
	return nil // the same clusters and shares, with new reasons for the others
}

// failedSchedulingNote sums up why a verdict places its workload nowhere, as kube-scheduler does: "0/3 clusters
// are available: 2 Insufficient nvidia.com/gpu, 1 does not match the policy's clusterSelector." The verdict's
// message comes first when it has one; every reason in full is on the WorkloadPlacement and in the audit.
func failedSchedulingNote(v *schemas.PlacementVerdict) string {
	var parts []string
	if v.Message != "" {
		parts = append(parts, v.Message)
	} else if v.Status != schemas.VerdictUnschedulable {
		parts = append(parts, string(v.Status))
	}
	if len(v.Reasons) > 0 {
		counts := map[string]int{}
		for c, reason := range v.Reasons {
			counts[shortReason(v.ReasonCodes[c], reason)]++
		}
		phrases := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
			if counts[a] != counts[b] {
				return counts[b] - counts[a]
			}
			return strings.Compare(a, b)
		})
		for i, p := range phrases {
			phrases[i] = fmt.Sprintf("%d %s", counts[p], p)
		}
		parts = append(parts, fmt.Sprintf("0/%d clusters are available: %s.", len(v.Reasons), strings.Join(phrases, ", ")))
	}
	if len(parts) == 0 {
		return string(v.Status)
	}
	return strings.Join(parts, "; ")
}

var (
	needsInTotal = regexp.MustCompile(`needs (\S+) [0-9]`)
	fitsNoNode   = regexp.MustCompile(`\((\S+) [0-9][^)]*\) fits no node`)
)

// shortReason is a cluster's reason, by its code, in a few words that many clusters share.
func shortReason(code, reason string) string {
	switch structs.RejectCode(code) {
	case structs.RejectCapacity:
		for _, re := range []*regexp.Regexp{needsInTotal, fitsNoNode} {
			if m := re.FindStringSubmatch(reason); m != nil {
				return "Insufficient " + m[1]
			}
		}
		return "Insufficient capacity"
	case structs.RejectSelector:
		return "not selected by the policy"
	case structs.RejectNotReady:
		return "not Ready"
	case structs.RejectTaint:
		return "had untolerated taint"
	case structs.RejectAPI:
		return "do not serve the kind"
	case structs.RejectGroup:
		return "hold no room for the group"
	case structs.RejectAvoided:
		return "being moved off"
	}
	return shorten(reason, 80)
}

// shorten cuts s to at most n bytes, on a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = "..."
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + more
}

// splitList splits a comma-separated annotation; nil when empty.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
