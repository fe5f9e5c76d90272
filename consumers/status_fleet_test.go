package consumers

import (
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/schemas"
)

// TestStatusWriterForgetsDeletedClusters: a deleted cluster's view, nodes and all, leaves the status writer's
// memory; the other clusters' views stay.
func TestStatusWriterForgetsDeletedClusters(t *testing.T) {
	s := NewStatusWriter(nil, nil, slog.New(slog.DiscardHandler))
	for _, cluster := range []string{"east", "burst-1"} {
		node := &schemas.NodeState{Cluster: cluster, Name: "n1", Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
		if err := s.Handle(t.Context(), delivery(t, 1, schemas.TypeNodeChanged, schemas.NodeSubject(cluster, "n1"), node)); err != nil {
			t.Fatal(err)
		}
	}
	deleted := &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster",
		Name: "burst-1", UID: "uid-burst-1"}}
	if err := s.Handle(t.Context(), delivery(t, 2, schemas.TypeClusterDeleted, schemas.ClusterSpecSubject("burst-1"), deleted)); err != nil {
		t.Fatal(err)
	}
	if _, kept := s.clusters["burst-1"]; kept {
		t.Error("the deleted cluster's view is still in memory")
	}
	if c := s.clusters["east"]; c == nil || len(c.nodes) != 1 {
		t.Errorf("east's view = %+v, want it kept with its node", c)
	}
}
