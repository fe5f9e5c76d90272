package lifecycle

import (
	"maps"
	"slices"
	"time"

	"github.com/fleetflow/fleetflow/placement/scheduler"
)

// capacityWakeInterval is the least event time between two wakes, by one cluster's node reports, of the
// workloads that cluster rejected for lack of room. Each wake runs their cycles again; a cluster reporting its
// nodes thousands of times a second (a bug, or a hostile producer) would otherwise have the placer run them at
// that rate and starve every other cluster's events. A report within the interval leaves the wake to the next
// tick, so freed room on a busy cluster is seen at most a tick late.
const capacityWakeInterval = time.Second

// nodeWakes throttles the wakes node reports cause, per cluster.
type nodeWakes struct {
	last     map[string]time.Time // when each cluster's reports last woke its blocked workloads
	deferred map[string]bool      // clusters whose reports asked for a wake the interval held back
}

func newNodeWakes() nodeWakes {
	return nodeWakes{last: map[string]time.Time{}, deferred: map[string]bool{}}
}

// nodeReported wakes what cluster's freed room may place, unless its reports woke it less than
// capacityWakeInterval ago; then the next tick does.
func (p *Controller) nodeReported(cluster string, touched *touchedSet) {
	if last, ok := p.nodeWakes.last[cluster]; ok && !p.at.now.Before(last) && p.at.now.Sub(last) < capacityWakeInterval {
		p.nodeWakes.deferred[cluster] = true
		return
	}
	p.nodeWakes.last[cluster] = p.at.now
	delete(p.nodeWakes.deferred, cluster)
	p.wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: cluster}, touched)
}

// wakeDeferred runs the wakes node reports asked for within the interval, in cluster order.
func (p *Controller) wakeDeferred(touched *touchedSet) {
	for _, cluster := range slices.Sorted(maps.Keys(p.nodeWakes.deferred)) {
		p.nodeWakes.last[cluster] = p.at.now
		delete(p.nodeWakes.deferred, cluster)
		p.wake(scheduler.Event{Kind: scheduler.EventCapacityFreed, Cluster: cluster}, touched)
	}
}

// forgetCluster drops what the throttle keeps of a deleted cluster.
func (w nodeWakes) forgetCluster(cluster string) {
	delete(w.last, cluster)
	delete(w.deferred, cluster)
}
