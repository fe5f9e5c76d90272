package app_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

var clustersResource = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"}

// fakeControlPlane is a control plane holding the Cluster objects named.
func fakeControlPlane(names ...string) dynamic.Interface {
	var objects []runtime.Object
	for _, n := range names {
		objects = append(objects, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1",
			"kind": "Cluster", "metadata": map[string]any{"name": n, "uid": "uid-" + n}}})
	}
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clustersResource: "ClusterList"}, objects...)
}

// allocatableCPU is the allocatable CPU a control plane shows on Cluster name, "" while it shows no status.
func allocatableCPU(t *testing.T, client dynamic.Interface, name string) string {
	t.Helper()
	obj, err := client.Resource(clustersResource).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &c); err != nil {
		t.Fatal(err)
	}
	if c.Status.Allocatable == nil {
		return ""
	}
	cpu := c.Status.Allocatable[corev1.ResourceCPU]
	return cpu.String()
}

// TestStatusWriterReplicasEachKnowTheWholeFleet runs two status writers on one JetStream, as two replicas
// share the work. Nodes published while both run go each to one of them on a shared consumer; yet every
// Cluster status either writes must sum all the cluster's nodes, or the status flips between the replicas'
// partial views at every heartbeat.
func TestStatusWriterReplicasEachKnowTheWholeFleet(t *testing.T) {
	ctx := t.Context()
	b := app.OpenTestBus(t)
	replicas := []dynamic.Interface{fakeControlPlane("east"), fakeControlPlane("east")}
	for i, client := range replicas {
		go func() {
			err := app.RunStatusWriter(ctx, b, &kube.Clients{Dynamic: client}, 30*time.Second,
				slog.New(slog.DiscardHandler).With("replica", i))
			if err != nil && ctx.Err() == nil {
				t.Errorf("status writer %d: %v", i, err)
			}
		}()
	}
	stream, cfg := streams.StatusConsumer()
	eventually(t, "both writers pulling from the shared consumer", func() bool {
		consumer, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
		if err != nil {
			return false
		}
		info, err := consumer.Info(ctx)
		return err == nil && info.NumWaiting >= len(replicas)
	})
	for i := range 6 {
		n := fmt.Sprintf("n%d", i)
		app.PublishEvent(t, b, schemas.TypeNodeChanged, schemas.NodeSubject("east", n), "node-"+n, &schemas.NodeState{
			Cluster: "east", Name: n, Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	}
	beat := 0
	eventually(t, "every replica showing the 6 nodes' 48 CPUs", func() bool {
		beat++
		app.PublishEvent(t, b, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"),
			fmt.Sprintf("heartbeat-%d", beat), &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
		for _, client := range replicas {
			if allocatableCPU(t, client, "east") != "48" {
				return false
			}
		}
		return true
	})
}
