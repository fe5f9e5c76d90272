package producers_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/internal/pipeline"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestClusterProducerPublishesNodesRemovedWhileItWasDown: a node removed while no cluster producer ran is seen
// deleted by no informer; once the node cache has synced, the producer publishes the deletion of every node
// the streams' state holds that the cluster no longer has, and leaves the others alone.
func TestClusterProducerPublishesNodesRemovedWhileItWasDown(t *testing.T) {
	b := newBench(t)
	ctx := context.Background()
	node := b.createNode(nodeSpec{name: "node-kept", allocatable: resources("cpu=8,pods=110")})
	// What an earlier producer published before it stopped; node-gone was removed while none ran.
	for _, name := range []string{"node-gone", node.Name} {
		subject := schemas.NodeSubject(testCluster, name)
		state := &schemas.NodeState{Cluster: testCluster, Name: name, Ready: true,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}}
		event, err := schemas.NewEvent(schemas.TypeNodeChanged, "/test", subject, "earlier-"+name, state)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.pub.Publish(ctx, subject, event); err != nil {
			t.Fatal(err)
		}
	}
	stateStream, err := b.js.Stream(ctx, schemas.StreamState)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the earlier node states in the state stream", func() bool {
		_, err := stateStream.GetLastMsgForSubject(ctx, schemas.NodeSubject(testCluster, "node-gone"))
		return err == nil
	})

	b.start(func(p *producers.ClusterProducer) { p.KnownNodes = pipeline.KnownNodes(b.js, testCluster) })
	eventually(t, "node-gone published deleted", func() bool {
		last, ok := b.last(schemas.NodeSubject(testCluster, "node-gone"))
		return ok && last.eventType == schemas.TypeNodeDeleted
	})
	b.waitNode(node.Name, "node-kept published as it is", func(*schemas.NodeState) bool { return true })
	for _, e := range b.messages(schemas.NodeSubject(testCluster, node.Name)) {
		if e.eventType == schemas.TypeNodeDeleted {
			t.Errorf("the node that is there was published deleted: %+v", e)
		}
	}
}
