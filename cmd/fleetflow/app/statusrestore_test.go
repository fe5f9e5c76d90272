package app_test

import (
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// TestRestartedStatusWriterKnowsTheWholeFleet: a status writer started after the fleet's nodes were published
// (its durable consumer resumes after them) reads them from the state stream, so the first heartbeat it
// handles shows the cluster's whole capacity, not only the nodes that changed since.
func TestRestartedStatusWriterKnowsTheWholeFleet(t *testing.T) {
	ctx := t.Context()
	b := app.OpenTestBus(t)
	for _, n := range []string{"n1", "n2", "n3"} {
		app.PublishEvent(t, b, schemas.TypeNodeChanged, schemas.NodeSubject("east", n), "node-"+n, &schemas.NodeState{
			Cluster: "east", Name: n, Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	}
	state, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the nodes in the state stream", func() bool {
		info, err := state.Info(ctx)
		return err == nil && info.State.Msgs == 3
	})
	clusters := schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"}
	dynamic := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{clusters: "ClusterList"},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
			"metadata": map[string]any{"name": "east", "uid": "uid-east"}}})
	writer, err := app.NewStatusWriter(ctx, b, &kube.Clients{Dynamic: dynamic}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	heartbeat := &schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()}
	if err := writer.Handle(ctx, deliveryOf(t, schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), heartbeat)); err != nil {
		t.Fatal(err)
	}
	obj, err := dynamic.Resource(clusters).Get(ctx, "east", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var c v1alpha1.Cluster
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &c); err != nil {
		t.Fatal(err)
	}
	if cpu := c.Status.Allocatable[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("24")) != 0 {
		t.Errorf("allocatable CPU after the first heartbeat = %s, want the three nodes' 24", cpu.String())
	}
}

// deliveryOf is an event as a consumer would deliver it.
func deliveryOf(t *testing.T, eventType, subject string, payload schemas.Payload) bus.Delivery {
	t.Helper()
	event, err := codec.NewEvent(eventType, "/test", subject, subject, payload)
	if err != nil {
		t.Fatal(err)
	}
	return bus.Delivery{Event: event, Payload: payload, Subject: subject, StreamSequence: 1000, Attempt: 1}
}
