package placementtest

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/placement/karta"
)

// Res builds a ResourceList from name, quantity pairs: Res("cpu", "4", "nvidia.com/gpu", "8").
// It panics on an odd count or a bad quantity, which is a bug in the test.
func Res(pairs ...string) corev1.ResourceList {
	if len(pairs)%2 != 0 {
		panic(fmt.Sprintf("placementtest.Res: odd number of arguments %q", pairs))
	}
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// AnalysisBuilder builds a karta.Analysis the way the RI engine would report it.
type AnalysisBuilder struct {
	a *karta.Analysis
}

// Workload starts an analysis of apiVersion/kind namespace/name.
func Workload(apiVersion, kind, namespace, name string) *AnalysisBuilder {
	return &AnalysisBuilder{a: &karta.Analysis{APIVersion: apiVersion, Kind: kind, Namespace: namespace,
		Name: name, ResourceInterface: kind, TotalRequests: corev1.ResourceList{}}}
}

// PyTorchJob starts an analysis of a kubeflow.org/v1 PyTorchJob.
func PyTorchJob(namespace, name string) *AnalysisBuilder {
	return Workload("kubeflow.org/v1", "PyTorchJob", namespace, name)
}

// Deployment starts an analysis of an apps/v1 Deployment.
func Deployment(namespace, name string) *AnalysisBuilder {
	return Workload("apps/v1", "Deployment", namespace, name)
}

// Component adds a component with pods identical pods requesting requests.
func (b *AnalysisBuilder) Component(name string, pods int64, requests corev1.ResourceList) *AnalysisBuilder {
	replicas := pods
	b.a.Components = append(b.a.Components, karta.ComponentInstance{Name: name, Replicas: &replicas, Pods: pods,
		PodRequests: requests})
	b.a.TotalPods += pods
	for name, q := range requests {
		total := b.a.TotalRequests[name]
		all := q.DeepCopy()
		all.Mul(pods)
		total.Add(all)
		b.a.TotalRequests[name] = total
	}
	return b
}

func (b *AnalysisBuilder) last() *karta.ComponentInstance {
	if len(b.a.Components) == 0 {
		panic("placementtest: add a Component first")
	}
	return &b.a.Components[len(b.a.Components)-1]
}

// Scalable marks the last component as scalable through spec.replicas.
func (b *AnalysisBuilder) Scalable() *AnalysisBuilder {
	c := b.last()
	c.Scalable = true
	c.ReplicasFieldPath = []string{"spec", "replicas"}
	return b
}

// NodeSelector sets the last component's node selector.
func (b *AnalysisBuilder) NodeSelector(selector map[string]string) *AnalysisBuilder {
	b.last().NodeSelector = selector
	return b
}

// Affinity sets the last component's required node affinity.
func (b *AnalysisBuilder) Affinity(ns *corev1.NodeSelector) *AnalysisBuilder {
	b.last().RequiredNodeAffinity = ns
	return b
}

// Tolerate adds tolerations to the last component.
func (b *AnalysisBuilder) Tolerate(tolerations ...corev1.Toleration) *AnalysisBuilder {
	c := b.last()
	c.Tolerations = append(c.Tolerations, tolerations...)
	return b
}

// Obj returns the analysis.
func (b *AnalysisBuilder) Obj() *karta.Analysis { return b.a }
