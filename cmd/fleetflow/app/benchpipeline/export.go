package benchpipeline

import (
	"fmt"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"
)

// Event is one synthetic producer event, for benchmarks that need the same fleet without a bus.
type Event struct {
	Subject string
	Event   cloudevents.Event
}

// FleetEvents hands each event that registers the pipeline benchmark's fleet to each, in the order loadFleet
// publishes them: the policy, the namespaces, then per cluster its Cluster object, installed APIs, a first
// heartbeat (at now) and its node states. They are made one at a time, so a caller need not hold 100,000
// node events at once.
func FleetEvents(clusters, nodesPerCluster, gpuNodePercent int, now time.Time, each func(Event) error) error {
	apis, err := servedAPIs()
	if err != nil {
		return err
	}
	policy, err := policyEvent()
	if err != nil {
		return err
	}
	namespaces, err := namespaceEvents()
	if err != nil {
		return err
	}
	for _, o := range append([]outgoing{policy}, namespaces...) {
		if err := each(Event{Subject: o.subject, Event: o.event}); err != nil {
			return err
		}
	}
	gpuNodes := nodesPerCluster * gpuNodePercent / 100
	for c := range clusters {
		events, err := clusterEvents(c, clusterLabels(c), apis, now)
		if err != nil {
			return err
		}
		for _, o := range events {
			if err := each(Event{Subject: o.subject, Event: o.event}); err != nil {
				return err
			}
		}
		for n := range nodesPerCluster {
			o, err := nodeEvent(c, n, gpuNodes)
			if err != nil {
				return fmt.Errorf("node %d of cluster %d: %w", n, c, err)
			}
			if err := each(Event{Subject: o.subject, Event: o.event}); err != nil {
				return err
			}
		}
	}
	return nil
}

// HeartbeatEvent is cluster c's heartbeat at now, as its producer sends it.
func HeartbeatEvent(c int, now time.Time) (Event, error) {
	o, err := heartbeatEvent(c, now)
	return Event{Subject: o.subject, Event: o.event}, err
}

// HeartbeatInterval is how often the synthetic cluster producers beat.
const HeartbeatInterval = heartbeatInterval
