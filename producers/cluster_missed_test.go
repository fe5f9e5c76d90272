package producers_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

// TestClusterProducerPublishesNodesRemovedWhileItWasDown: a node removed while no cluster producer ran is seen
// deleted by no informer; once the node cache has synced, the producer publishes the deletion of every node
// the streams' state holds that the cluster no longer has, and leaves the others alone.
func TestClusterProducerPublishesNodesRemovedWhileItWasDown(t *testing.T) {
	b := newBench(t)
	node := b.createNode(nodeSpec{name: "node-kept", allocatable: resources("cpu=8,pods=110")})
	// What an earlier producer published before it stopped; node-gone was removed while none ran.
	for _, name := range []string{"node-gone", node.Name} {
		b.publishToState(schemas.TypeNodeChanged, schemas.NodeSubject(testCluster, name), "earlier-"+name, &schemas.NodeState{
			Cluster: testCluster, Name: name, Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")}})
	}

	b.start(func(p *producers.ClusterProducer) { p.KnownNodes = app.KnownNodes(b.js, testCluster) })
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

// TestRestartedProducerStoresAStateThatReturned: a node's state that returns, while no producer runs, to one
// stored before a later state (a pod added, then deleted during a restart within the duplicate window) is
// dropped by JetStream as a duplicate of the first; the restarted producer, which knows nothing of the
// subject yet, reads the later state's sequence from the stream and stores the returned state after it.
func TestRestartedProducerStoresAStateThatReturned(t *testing.T) {
	b := newBench(t)
	const ns, nodeName = "returned", "node-returned"
	b.namespace(ns)
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=16"), ready: true})
	b.createPod(newPod(ns, "first").on(nodeName).container("cpu=1", "").build())

	stop := b.run()
	b.waitNode(nodeName, "one pod", func(s *schemas.NodeState) bool { return s.Pods == 1 })
	b.createPod(newPod(ns, "second").on(nodeName).container("cpu=2", "").build())
	b.waitNode(nodeName, "two pods", func(s *schemas.NodeState) bool { return s.Pods == 2 })
	stop()

	b.deletePod(ns, "second")
	stop = b.run()
	defer stop()
	b.waitNode(nodeName, "one pod again, stored after the state with two", func(s *schemas.NodeState) bool { return s.Pods == 1 })
}

// TestProducerOfAClusterRegisteredAgainStoresItsStatesAgain: a Cluster deleted and registered again has the
// placer drop what its cluster reported before (nodes, installed APIs) and wait for the producer started again to
// report them. Their content is unchanged, so JetStream would drop them as duplicates of the copies stored
// before the deletion, for as long as those are in its duplicate window; the producer stores them again after
// the Cluster's last change instead.
func TestProducerOfAClusterRegisteredAgainStoresItsStatesAgain(t *testing.T) {
	b := newBench(t)
	const nodeName = "node-registered-again"
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=16"), ready: true})

	stop := b.run()
	b.waitNode(nodeName, "the node's state", func(*schemas.NodeState) bool { return true })
	eventually(t, "the installed APIs", func() bool { _, ok := b.last(schemas.ClusterAPIsSubject(testCluster)); return ok })
	stop()

	// The Cluster is deleted and registered again, as the control-plane producer reports it.
	cluster := &schemas.ObjectDeleted{Workload: schemas.ObjectRef{APIVersion: "fleetflow.io/v1alpha1", Kind: "Cluster",
		Name: testCluster, UID: "uid-first"}}
	b.publishToState(schemas.TypeClusterDeleted, schemas.ClusterSpecSubject(testCluster), "cluster-deleted/uid-first", cluster)
	registered, ok := b.last(schemas.ClusterSpecSubject(testCluster))
	if !ok {
		t.Fatal("the Cluster's deletion is not stored")
	}
	stop = b.run()
	defer stop()
	for _, subject := range []string{schemas.NodeSubject(testCluster, nodeName), schemas.ClusterAPIsSubject(testCluster)} {
		eventually(t, subject+" stored again after the Cluster's registration", func() bool {
			last, ok := b.last(subject)
			return ok && last.seq > registered.seq
		})
	}
}

// TestClusterProducerStartingBesideAReplicaKeepsNodesItsWatchHasNotSeenYet: a node added after a starting
// producer's informer listed, which the other replica has published, is not in the synced cache yet (its
// watch event is on the way): it is there, and must not be published deleted.
func TestClusterProducerStartingBesideAReplicaKeepsNodesItsWatchHasNotSeenYet(t *testing.T) {
	b := newBench(t)
	// Whether a node's watch event beats the producer's look at its cache is a race: several nodes, added at
	// once as the state stream is read, in several starts.
	const starts, raced = 3, 10
	known := app.KnownNodes(b.js, testCluster)
	for start := range starts {
		names := make([]string, raced)
		for i := range raced {
			names[i] = fmt.Sprintf("node-raced-%d-%d", start, i)
			t.Cleanup(func() {
				_ = b.clients.Core.CoreV1().Nodes().Delete(context.Background(), names[i], metav1.DeleteOptions{})
			})
		}
		b.start(func(p *producers.ClusterProducer) {
			p.KnownNodes = func(ctx context.Context) ([]string, error) {
				held, err := known(ctx)
				if err != nil {
					return nil, err
				}
				// Added after the informer listed, and published by the other replica.
				errs := make([]error, raced)
				var wg sync.WaitGroup
				for i, name := range names {
					wg.Go(func() {
						_, errs[i] = b.clients.Core.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}},
							metav1.CreateOptions{})
					})
				}
				wg.Wait()
				return append(held, names...), errors.Join(errs...)
			}
		})
		for _, name := range names {
			b.waitNode(name, name+" published", func(*schemas.NodeState) bool { return true })
			for _, e := range b.messages(schemas.NodeSubject(testCluster, name)) {
				if e.eventType == schemas.TypeNodeDeleted {
					t.Errorf("%s, which is there, was published deleted", name)
				}
			}
		}
	}
}
