package producers

import (
	"context"
	"strconv"
	"time"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// HeartbeatID identifies the heartbeat of cluster in the heartbeat slot that contains t: replicas that
// beat within the same interval publish the same id, and JetStream keeps one of them.
func HeartbeatID(cluster string, t time.Time, interval time.Duration) string {
	return "heartbeat/" + cluster + "/" + strconv.FormatInt(t.Truncate(interval).UnixNano(), 10)
}

// HeartbeatFor is the heartbeat interval for a placer that marks a cluster NotReady after timeout of silence:
// DefaultHeartbeat, or a fifth of timeout when that is shorter (never under 500ms), so that several beats in a
// row must go missing, not one late beat, before a cluster counts as down.
func HeartbeatFor(timeout time.Duration) time.Duration {
	if timeout <= 0 {
		return DefaultHeartbeat
	}
	return min(DefaultHeartbeat, max(timeout/5, 500*time.Millisecond))
}

// minBeatTimeout bounds how long one beat may wait for the apiserver's readiness: an apiserver busy
// installing large CRDs can take seconds to answer, and is still up.
const minBeatTimeout = 5 * time.Second

// heartbeatLoop publishes a heartbeat every interval in which the apiserver says it is ready. Silence is
// the signal: the placer marks a cluster NotReady when its heartbeats stop.
func (p *ClusterProducer) heartbeatLoop(ctx context.Context) {
	ticker := time.NewTicker(p.Heartbeat)
	defer ticker.Stop()
	healthy := true
	for {
		err := p.beat(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && healthy:
			p.Log.Warn("no heartbeat: apiserver or bus not reachable", "error", err)
		case err == nil && !healthy:
			p.Log.Info("heartbeats resumed")
		}
		healthy = err == nil
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (p *ClusterProducer) beat(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(p.Heartbeat, minBeatTimeout))
	defer cancel()
	if err := p.Clients.Ready(ctx); err != nil {
		return err
	}
	now := time.Now().UTC()
	subject := schemas.ClusterHeartbeatSubject(p.Cluster)
	event, err := codec.NewEvent(schemas.TypeClusterHeartbeat, schemas.SourceClusterProducer(p.Cluster), subject,
		HeartbeatID(p.Cluster, now, p.Heartbeat), &schemas.ClusterHeartbeat{Cluster: p.Cluster, Time: now})
	if err != nil {
		return err
	}
	_, err = p.Publisher.Publish(ctx, subject, event)
	return err
}
