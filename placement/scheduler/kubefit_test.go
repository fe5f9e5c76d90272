package scheduler_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/placementtest"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// A cordoned node takes pods that tolerate node.kubernetes.io/unschedulable (kube-scheduler's
// NodeUnschedulable filter), also through a toleration of everything, and no other pods.
func TestCordonedNodeTakesOnlyPodsThatTolerateIt(t *testing.T) {
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		wantStatus  structs.DecisionStatus
	}{
		{"no toleration", nil, structs.StatusUnschedulable},
		{"a toleration of everything", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, structs.StatusPlaced},
		{"the cordon's own", []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule}}, structs.StatusPlaced},
		{"another key", []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}, structs.StatusUnschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			h.AddNodes("c1", placementtest.NodeSpec{Prefix: "n", Count: 1, Unschedulable: true,
				Taints:      []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}},
				Allocatable: res("cpu", "8", "memory", "32Gi")})
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			job := placementtest.PyTorchJob("ml", "job").Component("worker", 2, res("cpu", "1"))
			for _, tol := range tt.tolerations {
				job = job.Tolerate(tol)
			}
			if d := h.Place(h.AddWorkload(job.Obj(), nil)); d.Status != tt.wantStatus {
				t.Errorf("decision %s (reasons %v), want %s", d.Status, d.Reasons, tt.wantStatus)
			}
		})
	}
}

// Pods that take the same host port never share a node (kube-scheduler's NodePorts filter); with hostNetwork
// every containerPort is a host port. Nor do pods with a required anti-affinity by hostname to pods their own
// labels make them (InterPodAffinity). Four such pods need four nodes, whatever room one node has.
func TestNodeExclusivePodsKeepToDistinctNodes(t *testing.T) {
	hostNetwork := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{HostNetwork: true,
		Containers: []corev1.Container{{Name: "pytorch", Ports: []corev1.ContainerPort{{ContainerPort: 23456}}}}}}
	hostPort := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "pytorch", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}}}}}
	antiAffinity := func(selector map[string]string) *corev1.PodTemplateSpec {
		return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train", "role": "worker"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch"}}, Affinity: &corev1.Affinity{
				PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: selector}, TopologyKey: corev1.LabelHostname}}}}}}
	}
	tests := []struct {
		name       string
		template   *corev1.PodTemplateSpec
		nodes      int
		wantStatus structs.DecisionStatus
		wantNodes  int
	}{
		{"anti-affinity to its own pods, two nodes", antiAffinity(map[string]string{"app": "train"}), 2, structs.StatusUnschedulable, 0},
		{"anti-affinity to its own pods, four nodes", antiAffinity(map[string]string{"app": "train"}), 4, structs.StatusPlaced, 4},
		{"anti-affinity to other pods", antiAffinity(map[string]string{"app": "serve"}), 1, structs.StatusPlaced, 1},
		{"hostNetwork, one node", hostNetwork, 1, structs.StatusUnschedulable, 0},
		{"hostNetwork, four nodes", hostNetwork, 4, structs.StatusPlaced, 4},
		{"hostPort, two nodes", hostPort, 2, structs.StatusUnschedulable, 0},
		{"no host port, one node", nil, 1, structs.StatusPlaced, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			h.AddNodes("c1", gpuNodes("big", tt.nodes, "8", "0"))
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			job := placementtest.PyTorchJob("ml", "job").Component("worker", 4, res("cpu", "4", "nvidia.com/gpu", "2")).Obj()
			job.Components[0].PodTemplate = tt.template
			d := h.Place(h.AddWorkload(job, nil))
			if d.Status != tt.wantStatus {
				t.Fatalf("decision %s (reasons %v), want %s", d.Status, d.Reasons, tt.wantStatus)
			}
			nodes := map[string]bool{}
			for _, a := range d.Assignments {
				nodes[a.Node] = true
			}
			if len(nodes) != tt.wantNodes {
				t.Errorf("pods on %d nodes (%+v), want %d", len(nodes), d.Assignments, tt.wantNodes)
			}
		})
	}
}

// A template with spec.nodeName runs its pods on that node only: the workload goes to the cluster that has it.
func TestNodeNamePinsPodsToItsNode(t *testing.T) {
	for _, pinned := range []string{"a-node", "b-node"} {
		h := placementtest.NewHarness(t)
		h.AddCluster("a")
		h.AddNodes("a", gpuNodes("a-node", 1, "8", "0"))
		h.AddCluster("b")
		h.AddNodes("b", gpuNodes("b-node", 1, "8", "0"))
		h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
		job := placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("nvidia.com/gpu", "1")).Obj()
		job.Components[0].PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeName: pinned,
			Containers: []corev1.Container{{Name: "c"}}}}
		d := h.Place(h.AddWorkload(job, nil))
		want := []string{pinned[:1]}
		if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, want) {
			t.Errorf("pinned to %s: decision %s on %v (reasons %v), want cluster %v", pinned, d.Status, d.Clusters, d.Reasons, want)
		}
	}
}

// A pod with spec.nodeName bypasses kube-scheduler, so the kubelet's admission decides: a cordon and a
// NoSchedule taint do not keep it off its node, a NoExecute taint it does not tolerate does.
func TestNodeNamePodsPassCordonAndNoSchedule(t *testing.T) {
	tests := []struct {
		name          string
		unschedulable bool
		taints        []corev1.Taint
		wantStatus    structs.DecisionStatus
	}{
		{"cordoned", true, []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}, structs.StatusPlaced},
		{"NoSchedule taint", false, []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoSchedule}}, structs.StatusPlaced},
		{"NoExecute taint", false, []corev1.Taint{{Key: "dedicated", Value: "infer", Effect: corev1.TaintEffectNoExecute}}, structs.StatusUnschedulable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("c1")
			h.AddNodes("c1", placementtest.NodeSpec{Prefix: "pinned", Unschedulable: tt.unschedulable, Taints: tt.taints,
				Allocatable: res("cpu", "8", "memory", "32Gi")})
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{}))
			job := placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "1")).Obj()
			job.Components[0].PodTemplate = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeName: "pinned",
				Containers: []corev1.Container{{Name: "c"}}}}
			if d := h.Place(h.AddWorkload(job, nil)); d.Status != tt.wantStatus {
				t.Errorf("decision %s (reasons %v), want %s", d.Status, d.Reasons, tt.wantStatus)
			}
		})
	}
}

// A cluster tainted PreferNoSchedule takes workloads only when no other cluster of the same tier fits, as
// kube-scheduler ranks such nodes; a policy that tolerates the taint ranks it as usual.
func TestPreferNoScheduleClusterRanksLast(t *testing.T) {
	prefer := corev1.Taint{Key: "maintenance", Value: "soon", Effect: corev1.TaintEffectPreferNoSchedule}
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		scoring     v1alpha1.ScoringStrategy
		bigFree     string
		want        string
	}{
		// BinPack would take the fuller, tainted cluster.
		{"BinPack, not tolerated", nil, v1alpha1.ScoringBinPack, "32", "roomy"},
		{"BinPack, tolerated", []corev1.Toleration{{Key: "maintenance", Operator: corev1.TolerationOpExists}}, v1alpha1.ScoringBinPack, "32", "tainted"},
		// Only the tainted cluster fits: it is still used.
		{"only the tainted cluster fits", nil, v1alpha1.ScoringBinPack, "2", "tainted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := placementtest.NewHarness(t)
			h.AddCluster("tainted", placementtest.Taints(prefer))
			h.AddNodes("tainted", cpuNodes("n", 1, "8"))
			h.AddCluster("roomy")
			h.AddNodes("roomy", cpuNodes("n", 1, tt.bigFree))
			h.AddPolicy(anyPolicy(v1alpha1.SchedulePolicySpec{Scoring: tt.scoring, Tolerations: tt.tolerations}))
			d := h.Place(h.AddWorkload(placementtest.PyTorchJob("ml", "job").Component("worker", 1, res("cpu", "4")).Obj(), nil))
			if d.Status != structs.StatusPlaced || !slices.Equal(d.Clusters, []string{tt.want}) {
				t.Errorf("decision %s on %v (reasons %v), want %s", d.Status, d.Clusters, d.Reasons, tt.want)
			}
			if says := strings.Contains(d.Message, "1 of them with a PreferNoSchedule taint"); says != (tt.want == "roomy") {
				t.Errorf("message %q, want the taint named only when it decided", d.Message)
			}
		})
	}
}
