package status

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/fleetflow/fleetflow/schemas"
)

// verdictBuilder builds verdicts for the tests.
type verdictBuilder struct{ v schemas.PlacementVerdict }

func verdict(status schemas.VerdictStatus, seq uint64) *verdictBuilder {
	return &verdictBuilder{v: schemas.PlacementVerdict{Workload: schemas.ObjectRef{APIVersion: "kubeflow.org/v1",
		Kind: "PyTorchJob", Namespace: "ns", Name: "job", UID: "uid-job"}, Epoch: "e1", Sequence: seq, Status: status,
		Policy: "gold"}}
}

func (b *verdictBuilder) on(clusters ...string) *verdictBuilder { b.v.Clusters = clusters; return b }

func (b *verdictBuilder) rejects(cluster, code, reason string) *verdictBuilder {
	if b.v.Reasons == nil {
		b.v.Reasons, b.v.ReasonCodes = map[string]string{}, map[string]string{}
	}
	b.v.Reasons[cluster], b.v.ReasonCodes[cluster] = reason, code
	return b
}

func (b *verdictBuilder) build() *schemas.PlacementVerdict { return &b.v }

// shownAs are the annotations a workload shows with verdict status on clusters at sequence seq.
func shownAs(status schemas.VerdictStatus, clusters string, seq string) map[string]string {
	a := map[string]string{schemas.AnnotationPlacement: string(status), schemas.AnnotationVerdictSequence: seq}
	if clusters != "" {
		a[schemas.AnnotationCluster] = clusters
	}
	return a
}

func TestWorkloadEvents(t *testing.T) {
	notReady := "is not Ready: its producer has sent no heartbeat since 12:00:00"
	tests := []struct {
		name          string
		before, after map[string]string
		verdict       *schemas.PlacementVerdict
		want          []string // "Type Reason: note"
	}{
		{name: "first placed", before: map[string]string{}, after: shownAs("Placed", "west", "e1/5"),
			verdict: verdict("Placed", 5).on("west").build(), want: []string{"Normal Scheduled: Placed on west by policy gold"}},
		{name: "redelivered verdict shows nothing new", before: shownAs("Placed", "west", "e1/5"),
			after: shownAs("Placed", "west", "e1/5"), verdict: verdict("Placed", 5).on("west").build()},
		{name: "older verdict not shown", before: shownAs("Placed", "west", "e1/9"),
			after: shownAs("Placed", "west", "e1/9"), verdict: verdict("Placed", 5).on("east").build()},
		{name: "failed over", before: shownAs("Placed", "a", "e1/5"), after: shownAs("Placed", "b", "e1/8"),
			verdict: verdict("Placed", 8).on("b").rejects("a", "NotReady", notReady).build(),
			want:    []string{"Warning FailedOver: Failed over from a to b by policy gold: a " + notReady}},
		{name: "moved off a cluster it pended on", before: shownAs("Placed", "a", "e1/5"), after: shownAs("Placed", "b", "e1/8"),
			verdict: verdict("Placed", 8).on("b").rejects("a", "Avoided", "its pods pended there for 5m0s").build(),
			want:    []string{"Normal Moved: Moved from a to b by policy gold: a its pods pended there for 5m0s"}},
		{name: "new reasons, same cluster", before: shownAs("Placed", "a", "e1/5"), after: shownAs("Placed", "a", "e1/8"),
			verdict: verdict("Placed", 8).on("a").rejects("b", "Capacity", "needs cpu 4 in total, 0 free").build()},
		{name: "spread grows", before: shownAs("Placed", "a", "e1/5"), after: shownAs("Placed", "a,b", "e1/8"),
			verdict: verdict("Placed", 8).on("a", "b").build(), want: []string{"Normal Scheduled: Placed on a,b by policy gold"}},
		{name: "unschedulable", before: map[string]string{}, after: shownAs("Unschedulable", "", "e1/3"),
			verdict: verdict("Unschedulable", 3).rejects("a", "Capacity", "needs nvidia.com/gpu 4 in total, 0 free").
				rejects("b", "Capacity", "pod worker (nvidia.com/gpu 2) fits no node: largest free 1 on n1").
				rejects("c", "Selector", "does not match the policy's clusterSelector").build(),
			want: []string{"Warning FailedScheduling: 0/3 clusters are available: 2 Insufficient nvidia.com/gpu, 1 not selected by the policy."}},
		{name: "apply failed", before: shownAs("Placed", "a", "e1/5"),
			after: withAnnotation(shownAs("Placed", "a", "e1/5"), schemas.AnnotationPlacementError, "Apply on a: forbidden"),
			want:  []string{"Warning ApplyFailed: Apply on a: forbidden"}},
		{name: "apply failed again alike", before: withAnnotation(shownAs("Placed", "a", "e1/5"), schemas.AnnotationPlacementError, "Apply on a: forbidden"),
			after: withAnnotation(shownAs("Placed", "a", "e1/5"), schemas.AnnotationPlacementError, "Apply on a: forbidden")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range workloadEvents(tt.before, tt.after, tt.verdict) {
				got = append(got, e.Type+" "+e.Reason+": "+e.Note)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("events\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func withAnnotation(a map[string]string, key, value string) map[string]string {
	a[key] = value
	return a
}

func TestFailedSchedulingNote(t *testing.T) {
	tests := []struct {
		name    string
		verdict *schemas.PlacementVerdict
		want    string
	}{
		{name: "no policy", verdict: &schemas.PlacementVerdict{Status: schemas.VerdictNoPolicy}, want: "NoPolicy"},
		{name: "invalid, with its message", verdict: &schemas.PlacementVerdict{Status: schemas.VerdictInvalid,
			Message: "no ResourceInterface describes Widget.example.com"}, want: "no ResourceInterface describes Widget.example.com"},
		{name: "most common reason first", verdict: verdict("Unschedulable", 1).rejects("a", "Taint", "has taint x").
			rejects("b", "NotReady", "is not Ready").rejects("c", "NotReady", "is not Ready").
			rejects("d", "Capacity", "no room").build(),
			want: "0/4 clusters are available: 2 not Ready, 1 Insufficient capacity, 1 had untolerated taint."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failedSchedulingNote(tt.verdict); got != tt.want {
				t.Errorf("note %q, want %q", got, tt.want)
			}
		})
	}
}

func TestShortenKeepsRunesWhole(t *testing.T) {
	s := strings.Repeat("é", 20) // 2 bytes each
	got := shorten(s, 12)
	if len(got) > 12 || !strings.HasSuffix(got, "...") || !strings.HasPrefix(s, strings.TrimSuffix(got, "...")) {
		t.Errorf("shorten = %q (%d bytes), want at most 12 bytes of whole runes and ...", got, len(got))
	}
}

// TestClusterReadinessChangesRecordOneEvent: a Cluster turning Ready, then NotReady, records one Event each, and
// heartbeats that change nothing record none.
func TestClusterReadinessChangesRecordOneEvent(t *testing.T) {
	f := newFleetStatusFixture(t)
	recorder := events.NewFakeRecorder(10)
	f.s.Events = recorder
	f.s.HeartbeatTimeout = 30 * time.Second
	beat := time.Now()
	for i := range 3 {
		f.must(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
			&schemas.ClusterHeartbeat{Cluster: "east", Time: beat.Add(time.Duration(i) * time.Second)})
	}
	f.must(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: beat.Add(time.Minute)})
	f.must(schemas.TypePlacerTick, schemas.SubjectPlacerTick, &schemas.PlacerTick{Time: beat.Add(2 * time.Minute)})
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, strings.Join(strings.Fields(e)[:2], " "))
	}
	if want := []string{corev1.EventTypeNormal + " Ready", corev1.EventTypeWarning + " NotReady"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}
