package producers_test

import (
	"strings"
	"testing"

	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/schemas"
)

// publishedLines counts the producer's debug lines for publishes to subject; with duplicate set, only
// those JetStream acknowledged as duplicates.
func publishedLines(logs *logbuf.Buffer, subject string, duplicate bool) int {
	n := 0
	for line := range strings.SplitSeq(logs.String(), "\n") {
		if strings.Contains(line, "msg=published") && strings.Contains(line, "subject="+subject+" ") &&
			(!duplicate || strings.Contains(line, "duplicate=true")) {
			n++
		}
	}
	return n
}

func TestReplicasStoreEachStateOnce(t *testing.T) {
	b := newBench(t)
	const ns, nodeName = "replicas", "node-replicas"
	b.namespace(ns)
	b.createNode(nodeSpec{name: nodeName, allocatable: resources("cpu=16"), ready: true})
	b.createPod(newPod(ns, "first").on(nodeName).container("cpu=1", "").build())
	nodeSubject := schemas.NodeSubject(testCluster, nodeName)
	apisSubject := schemas.ClusterAPIsSubject(testCluster)

	_, logsA := b.start(nil)
	b.waitNode(nodeName, "state from replica A", func(s *schemas.NodeState) bool { return s.Pods == 1 })
	eventually(t, "installed APIs from replica A", func() bool { return publishedLines(logsA, apisSubject, false) > 0 })
	nodeBefore, apisBefore := len(b.messages(nodeSubject)), len(b.messages(apisSubject))

	// Replica B observes the same node and APIs: JetStream acknowledges its publishes as duplicates.
	_, logsB := b.start(nil)
	eventually(t, "replica B publishing the node state", func() bool { return publishedLines(logsB, nodeSubject, true) > 0 })
	eventually(t, "replica B publishing the APIs", func() bool { return publishedLines(logsB, apisSubject, true) > 0 })
	// No CRD changes while this test runs, so both replicas saw the same APIs.
	if n, m := len(b.messages(nodeSubject)), len(b.messages(apisSubject)); n != nodeBefore || m != apisBefore {
		t.Errorf("stored node states %d -> %d, APIs %d -> %d with a second replica: want no new messages",
			nodeBefore, n, apisBefore, m)
	}

	// A change seen by both replicas is stored once.
	b.createPod(newPod(ns, "second").on(nodeName).container("cpu=2", "").build())
	eventually(t, "both replicas publishing the new state", func() bool {
		return publishedLines(logsA, nodeSubject, false) >= 2 && publishedLines(logsB, nodeSubject, false) >= 2
	})
	msgs := b.messages(nodeSubject)
	if len(msgs) != nodeBefore+1 {
		t.Errorf("%d node states stored after one change seen by two replicas, want %d", len(msgs), nodeBefore+1)
	}
	if last := msgs[len(msgs)-1].payload.(*schemas.NodeState); last.Pods != 2 || !sameQuantities(last.Requested, resources("cpu=3")) {
		t.Errorf("last state %+v, want 2 pods requesting cpu 3", last)
	}
}
