package status

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/schemas"
)

func workloadShowing(annotations map[string]string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("kubeflow.org/v1")
	obj.SetKind("PyTorchJob")
	obj.SetNamespace("ns")
	obj.SetName("job")
	obj.SetUID("uid-job")
	obj.SetAnnotations(annotations)
	return obj
}

func TestPlacementStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	spread := map[string]string{schemas.AnnotationPlacement: "Placed", schemas.AnnotationPolicy: "gold",
		schemas.AnnotationCluster: "a,b", schemas.AnnotationClusterReplicas: "a=6,b=4", schemas.AnnotationPhase: "Initializing",
		schemas.AnnotationClusterPhases: "a=Running,b=Initializing", schemas.AnnotationVerdictSequence: "e1/8",
		schemas.AnnotationReasons: "c: needs cpu 4 in total, 0 free"}
	v := verdict("Placed", 8).on("a", "b").rejects("c", "Capacity", "needs cpu 4 in total, 0 free").build()
	status, _ := placementStatus(workloadShowing(spread), &v1alpha1.WorkloadPlacementStatus{}, v, nil, nil, now)
	if status.Workload.Kind != "PyTorchJob" || status.Workload.UID != "uid-job" || status.Verdict != "Placed" ||
		status.Policy != "gold" || status.ClusterNames != "a,b" || status.Phase != "Initializing" {
		t.Errorf("status %+v, want the workload's verdict, policy, clusters and phase", status)
	}
	if len(status.Clusters) != 2 || status.Clusters[0].Phase != "Running" || *status.Clusters[0].Replicas != 6 ||
		status.Clusters[1].Phase != "Initializing" || *status.Clusters[1].Replicas != 4 {
		t.Errorf("clusters %+v, want a Running with 6 and b Initializing with 4", status.Clusters)
	}
	if len(status.Reasons) != 1 || status.Reasons[0].Cluster != "c" {
		t.Errorf("reasons %+v, want c's", status.Reasons)
	}
	if status.LastDecision == nil || status.LastDecision.Sequence != "e1/8" || !status.LastDecision.Time.Equal(ptrTime(now)) {
		t.Errorf("last decision %+v, want e1/8 shown now", status.LastDecision)
	}

	t.Run("the same decision keeps when it was shown", func(t *testing.T) {
		shown := status
		shown.LastDecision = &v1alpha1.DecisionReference{Sequence: "e1/8", Time: &earlier}
		again, _ := placementStatus(workloadShowing(spread), &shown, nil, nil, nil, now)
		if !again.LastDecision.Time.Equal(&earlier) || len(again.Reasons) != 1 {
			t.Errorf("last decision %+v and reasons %+v, want the earlier time and the reasons kept", again.LastDecision, again.Reasons)
		}
	})
	t.Run("reasons read back from the annotation when none were shown", func(t *testing.T) {
		read, _ := placementStatus(workloadShowing(spread), &v1alpha1.WorkloadPlacementStatus{}, nil, nil,
			map[string]bool{"a": true, "b": true, "c": true}, now)
		if len(read.Reasons) != 1 || read.Reasons[0].Reason != "needs cpu 4 in total, 0 free" || read.Message != "" {
			t.Errorf("reasons %+v, message %q, want c's reason and no message", read.Reasons, read.Message)
		}
	})
	t.Run("an Apply is news once", func(t *testing.T) {
		applied := &schemas.PlacementApplied{Cluster: "a", Action: schemas.ActionApply, Sequence: 8}
		first, news := placementStatus(workloadShowing(spread), &status, nil, applied, nil, now)
		if !news || len(first.Applied) != 1 || first.Applied[0].Sequence != 8 {
			t.Fatalf("applied %+v (news %t), want a at 8, news", first.Applied, news)
		}
		if _, news := placementStatus(workloadShowing(spread), &first, nil, applied, nil, now); news {
			t.Error("the same Apply again is news")
		}
		older := &schemas.PlacementApplied{Cluster: "a", Action: schemas.ActionApply, Sequence: 7}
		if again, news := placementStatus(workloadShowing(spread), &first, nil, older, nil, now); news || again.Applied[0].Sequence != 8 {
			t.Errorf("an older Apply: applied %+v, news %t; want 8 kept, no news", again.Applied, news)
		}
	})
}

func ptrTime(t time.Time) *metav1.Time {
	m := metav1.NewTime(t)
	return &m
}

func TestShownSince(t *testing.T) {
	tests := []struct {
		mark string
		seq  uint64
		want bool
	}{
		{mark: "e1/8", seq: 8, want: true},
		{mark: "e1/9", seq: 8, want: true},
		{mark: "e1/7", seq: 8, want: false},
		{mark: "12", seq: 8, want: true},
		{mark: "", seq: 8, want: false},
	}
	for _, tt := range tests {
		if got := shownSince(tt.mark, tt.seq); got != tt.want {
			t.Errorf("shownSince(%q, %d) = %t, want %t", tt.mark, tt.seq, got, tt.want)
		}
	}
}
