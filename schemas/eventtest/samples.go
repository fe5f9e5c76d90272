package eventtest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/schemas"
)

// Samples is a real-looking payload of every event type, keyed by type, as the producers, the placer and the
// appliers send them: the seeds of the fuzz tests of the decoders.
func Samples() map[string]schemas.Payload {
	ref := schemas.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "team", Name: "web", UID: "uid-web"}
	web := Deployment("web", "500m")
	analysis := schemas.Analysis{ResourceInterface: "deployment", TotalPods: 1,
		TotalRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
		Components:    []schemas.AnalyzedComponent{{Name: "web", Pods: 1, PodRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}}
	verdict := &schemas.PlacementVerdict{Workload: ref, Sequence: 3, Epoch: "2026-01-02T03:04:05Z", Status: schemas.VerdictPlaced,
		Policy: "gold", Clusters: []string{"east"}, Replicas: map[string]int32{"east": 1},
		Reasons: map[string]string{"west": `pod web (cpu 500m) fits no node: largest free 250m on "w-0"`}, ReasonCodes: map[string]string{"west": "Capacity"},
		ViewSequence: 41, Analysis: &analysis}
	node := Node("east", "e-0", "8")
	node.UID, node.Labels, node.Pods = "uid-e-0", map[string]string{"nvidia.com/gpu.product": "H100"}, 3
	node.Taints = []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	node.Requested = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	node.WorkloadPods = map[string]int{"uid-web": 1}
	node.WorkloadRequested = map[string]corev1.ResourceList{"uid-web": {corev1.ResourceCPU: resource.MustParse("500m")}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	ri := Object("optimization.nvidia.com/v1alpha1", "ResourceInterface", "", "widgets", nil, map[string]any{"spec": map[string]any{
		"structureDefinition": map[string]any{"rootComponent": map[string]any{"name": "w", "kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"},
			"specDefinition": map[string]any{"podTemplateSpecPath": ".spec.template"}}}}})
	return map[string]schemas.Payload{
		schemas.TypeWorkloadChanged: web,
		schemas.TypeWorkloadDeleted: &schemas.WorkloadDeleted{Workload: ref},
		schemas.TypePlacementDecided: &schemas.PlacementDecided{DecisionID: "uid-web/3/Apply/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: 3, Object: web.Object, Policy: "gold", Clusters: []string{"east"},
			NamespaceLabels: map[string]string{"tier": "gold"}, Verdict: verdict},
		schemas.TypePlacementApplied: &schemas.PlacementApplied{DecisionID: "uid-web/3/Apply/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: 3, ResourceVersion: "812"},
		schemas.TypePlacementFailed: &schemas.PlacementFailed{DecisionID: "uid-web/3/Apply/east", Workload: ref, Cluster: "east",
			Action: schemas.ActionApply, Sequence: 3, Error: `namespaces "team" is forbidden`, Attempts: 5},
		schemas.TypePlacementVerdict:         verdict,
		schemas.TypeWorkloadAnalyzed:         &schemas.WorkloadAnalyzed{Workload: ref, Analysis: analysis},
		schemas.TypePolicyChanged:            Policy("gold", FillInOrder("east", "west")),
		schemas.TypePolicyDeleted:            &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "SchedulePolicy", Name: "gold", UID: "uid-gold"}},
		schemas.TypeResourceInterfaceChanged: ri,
		schemas.TypeResourceInterfaceDeleted: &schemas.ObjectDeleted{Workload: ri.Ref()},
		schemas.TypeClusterChanged:           Cluster("east", map[string]any{"region": "eu"}),
		schemas.TypeClusterDeleted:           &schemas.ObjectDeleted{Workload: Cluster("east", nil).Ref()},
		schemas.TypeNamespaceChanged:         Object("v1", "Namespace", "", "team", map[string]any{"tier": "gold"}, nil),
		schemas.TypeNamespaceDeleted:         &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "team", UID: "uid-team"}},
		schemas.TypeNodeChanged:              node,
		schemas.TypeNodeDeleted:              &schemas.NodeDeleted{Cluster: "east", Name: "e-0"},
		schemas.TypeClusterHeartbeat:         &schemas.ClusterHeartbeat{Cluster: "east", Time: at},
		schemas.TypeClusterAPIs:              &schemas.ClusterAPIs{Cluster: "east", APIs: []string{"v1/Pod", "apps/v1/Deployment"}},
		schemas.TypeWorkloadStatus: &schemas.WorkloadStatus{Cluster: "east", Workload: ref, PendingPods: 1, PendingSince: &at,
			Status:     map[string]any{"replicas": 1.0, "conditions": []any{map[string]any{"type": "Available", "status": "False"}}},
			Generation: 2, SourceGeneration: 4, SourceContent: "3f2a"},
		schemas.TypePlacerTick: &schemas.PlacerTick{Time: at, Placer: "placer-1", Settings: &schemas.PlacerSettings{
			HeartbeatTimeout: metav1.Duration{Duration: time.Minute}, PendingTimeout: metav1.Duration{Duration: 5 * time.Minute},
			ReservationTTL: metav1.Duration{Duration: 2 * time.Minute}, FailedApplyRetry: metav1.Duration{Duration: 30 * time.Second}}},
		schemas.TypePlacerLeader: &schemas.PlacerLeader{Placer: "placer-1", Since: at},
	}
}
