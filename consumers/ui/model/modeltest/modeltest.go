package modeltest

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/consumers/ui/model"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// GPU is the GPU resource the builders use.
const GPU = "nvidia.com/gpu"

// Fleet feeds a model the messages the streams would hold.
type Fleet struct {
	Model *model.Model
	// Now is the time stored on every message.
	Now time.Time
	seq uint64
}

// New returns a fleet feeding a model whose clock is fixed at now.
func New(now time.Time) *Fleet {
	return &Fleet{Model: model.New(model.Options{Now: func() time.Time { return now }}), Now: now}
}

// Apply feeds one message, stored now; live ones reach the live feed.
func (f *Fleet) Apply(eventType string, p schemas.Payload, live bool) {
	f.seq++
	f.Model.Apply(model.Input{ID: fmt.Sprintf("event-%d", f.seq), Type: eventType, Payload: p, Stored: f.Now, Live: live})
}

// Cluster registers a cluster that beat age ago.
func (f *Fleet) Cluster(name string, age time.Duration) *Fleet {
	f.Apply(schemas.TypeClusterChanged, eventtest.Cluster(name, map[string]any{"region": "east"}), false)
	f.Model.Apply(model.Input{Type: schemas.TypeClusterHeartbeat, Stored: f.Now.Add(-age), Live: true,
		Payload: &schemas.ClusterHeartbeat{Cluster: name, Time: f.Now.Add(-age)}})
	return f
}

// Node adds a Ready node of cpu cores and memGi GiB, gpus GPUs of which used are requested.
func (f *Fleet) Node(cluster, name string, cpu, memGi, gpus, used int64) *Fleet {
	f.Apply(schemas.TypeNodeChanged, Node(cluster, name, cpu, memGi, gpus, used), false)
	return f
}

// Node is a Ready node of cpu cores and memGi GiB, gpus GPUs of which used are requested (with 6 cores and
// 48Gi per GPU used, as fleetgen's jobs ask).
func Node(cluster, name string, cpu, memGi, gpus, used int64) *schemas.NodeState {
	n := &schemas.NodeState{Cluster: cluster, Name: name, Ready: true,
		Allocatable: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity(memGi<<30, resource.BinarySI),
			corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI)},
		Requested: corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(6*used, resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((48*used)<<30, resource.BinarySI)}}
	if gpus > 0 {
		n.Allocatable[GPU] = *resource.NewQuantity(gpus, resource.DecimalSI)
		n.Requested[GPU] = *resource.NewQuantity(used, resource.DecimalSI)
	}
	return n
}

// Workload submits a PyTorchJob of namespace/name, created age ago.
func (f *Fleet) Workload(namespace, name string, age time.Duration) *Fleet {
	obj := eventtest.Object("kubeflow.org/v1", "PyTorchJob", namespace, name, nil, map[string]any{"spec": map[string]any{}})
	obj.Object["metadata"].(map[string]any)["creationTimestamp"] = f.Now.Add(-age).UTC().Format(time.RFC3339)
	f.Apply(schemas.TypeWorkloadChanged, obj, false)
	return f
}

// Ref is the reference of the PyTorchJob Workload submits.
func Ref(namespace, name string) schemas.ObjectRef {
	return schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: namespace, Name: name, UID: "uid-" + name}
}

// Verdict is a verdict of sequence seq on the PyTorchJob, of pods pods asking gpus GPUs in all: Placed on
// clusters when there are any, else Unschedulable with reasons.
func Verdict(namespace, name string, seq uint64, pods, gpus int64, clusters []string, reasons map[string]string) *schemas.PlacementVerdict {
	v := &schemas.PlacementVerdict{Workload: Ref(namespace, name), Sequence: seq, Epoch: "e1", Status: schemas.VerdictUnschedulable,
		Clusters: clusters, Reasons: reasons, Policy: "fill",
		Analysis: &schemas.Analysis{ResourceInterface: "pytorchjob", TotalPods: pods,
			TotalRequests: corev1.ResourceList{GPU: *resource.NewQuantity(gpus, resource.DecimalSI)},
			Components: []schemas.AnalyzedComponent{{Name: "worker", Pods: pods,
				PodRequests: corev1.ResourceList{GPU: *resource.NewQuantity(gpus/max(pods, 1), resource.DecimalSI)}}}}}
	if len(clusters) > 0 {
		v.Status = schemas.VerdictPlaced
	}
	return v
}

// Synthetic fills a fleet of clusters clusters of nodes nodes each, named cluster-NNN and node-NNNN, as
// fleetgen shapes them: 30 to 70% GPU nodes (64 cores, 512Gi, 8 GPUs, a quarter, half, three quarters or all
// of them used, or none), the rest CPU nodes (32 cores, 128Gi), from seed.
func Synthetic(f *Fleet, clusters, nodes int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	for c := range clusters {
		name := fmt.Sprintf("cluster-%03d", c)
		f.Cluster(name, time.Second)
		gpuNodes := int(float64(nodes) * (0.3 + 0.4*rng.Float64()))
		for n := range nodes {
			if n < gpuNodes {
				f.Node(name, fmt.Sprintf("node-%04d", n), 64, 512, 8, 2*rng.Int64N(5))
			} else {
				f.Node(name, fmt.Sprintf("node-%04d", n), 32, 128, 0, 0)
			}
		}
	}
}
