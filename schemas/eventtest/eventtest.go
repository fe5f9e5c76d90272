// Package eventtest builds the payloads of input events for tests: control-plane objects (Clusters,
// SchedulePolicies, workloads) as the control-plane producer sends them, and node states as a cluster's
// producer does; Samples gives one payload of every event type. It imports only schemas and the Kubernetes
// types, so the tests of placement/lifecycle and of any consumer can use it.
package eventtest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/schemas"
)

// Object is a control-plane object as its producer sends it: metadata with name, uid "uid-<name>",
// resourceVersion "1", the namespace unless it is empty and the labels unless they are nil, and the extra
// top-level fields (spec, status).
func Object(apiVersion, kind, namespace, name string, labels, extra map[string]any) *schemas.ObjectChanged {
	meta := map[string]any{"name": name, "uid": "uid-" + name, "resourceVersion": "1"}
	if namespace != "" {
		meta["namespace"] = namespace
	}
	if labels != nil {
		meta["labels"] = labels
	}
	obj := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": meta}
	for k, v := range extra {
		obj[k] = v
	}
	return &schemas.ObjectChanged{Object: obj}
}

// Cluster is a fleetflow Cluster with labels (none when nil) whose kubeconfig is in the Secret of its name in
// fleetflow-system.
func Cluster(name string, labels map[string]any) *schemas.ObjectChanged {
	return Object("fleetflow.io/v1alpha1", "Cluster", "", name, labels, map[string]any{
		"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": name, "namespace": "fleetflow-system"}}})
}

// Policy is a SchedulePolicy with spec.
func Policy(name string, spec map[string]any) *schemas.ObjectChanged {
	return Object("fleetflow.io/v1alpha1", "SchedulePolicy", "", name, nil, map[string]any{"spec": spec})
}

// FillInOrder is the spec of a SchedulePolicy that fills the clusters labelled name=<cluster>, one after
// another in the order given.
func FillInOrder(clusters ...string) map[string]any {
	tiers := make([]any, 0, len(clusters))
	for _, c := range clusters {
		tiers = append(tiers, map[string]any{"matchLabels": map[string]any{"name": c}})
	}
	return map[string]any{"orderedClusterSelector": map[string]any{"tiers": tiers}}
}

// Deployment is an apps/v1 Deployment in namespace team of one replica, whose one container, web, requests
// cpu.
func Deployment(name, cpu string) *schemas.ObjectChanged {
	return Object("apps/v1", "Deployment", "team", name, nil, map[string]any{"spec": map[string]any{"replicas": int64(1),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web",
			"resources": map[string]any{"requests": map[string]any{"cpu": cpu}}}}}}}})
}

// Node is a Ready node of cluster with cpu CPUs allocatable and room for 110 pods.
func Node(cluster, name, cpu string) *schemas.NodeState {
	return &schemas.NodeState{Cluster: cluster, Name: name, Ready: true,
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}}
}
