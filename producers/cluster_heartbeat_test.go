package producers_test

import (
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

func TestHeartbeatID(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := producers.HeartbeatID("gpu-a", base.Add(100*time.Millisecond), time.Second)
	b := producers.HeartbeatID("gpu-a", base.Add(900*time.Millisecond), time.Second)
	c := producers.HeartbeatID("gpu-a", base.Add(1100*time.Millisecond), time.Second)
	// Two replicas beating in the same one-second slot share an id; the next slot gets a new one.
	if a != b || a == c {
		t.Errorf("ids %q %q %q: want the first two equal and the third different", a, b, c)
	}
	if want := "heartbeat/gpu-a/1767323045000000000"; a != want {
		t.Errorf("id = %q, want %q (the slot start in unix nanoseconds)", a, want)
	}
}

func TestHeartbeatsOnlyWhileTheAPIServerAnswers(t *testing.T) {
	b := newBench(t)
	b.start(func(p *producers.ClusterProducer) { p.Heartbeat = 200 * time.Millisecond })

	// A second producer for a cluster whose apiserver does not answer: a closed port on loopback.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := listener.Addr().String()
	if err := listener.Close(); err != nil {
		t.Fatal(err)
	}
	deadClients, err := kube.NewClients(&rest.Config{Host: "https://" + deadAddr, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	dead := &bench{t: t, clients: deadClients, js: b.js, pub: b.pub, stream: b.stream}
	dead.start(func(p *producers.ClusterProducer) { p.Cluster = "dead"; p.Heartbeat = 200 * time.Millisecond })

	subject := schemas.ClusterHeartbeatSubject(testCluster)
	eventually(t, "three heartbeats", func() bool { return len(b.messages(subject)) >= 3 })
	beats := b.messages(subject)
	last := beats[len(beats)-1].payload.(*schemas.ClusterHeartbeat)
	if last.Cluster != testCluster || time.Since(last.Time) > time.Minute || last.Time.After(time.Now().Add(time.Second)) {
		t.Errorf("heartbeat %+v: want cluster %s and a recent time", last, testCluster)
	}
	for i := 1; i < len(beats); i++ {
		prev, cur := beats[i-1].payload.(*schemas.ClusterHeartbeat), beats[i].payload.(*schemas.ClusterHeartbeat)
		if !cur.Time.After(prev.Time) {
			t.Errorf("heartbeat %d at %v is not after %v", i, cur.Time, prev.Time)
		}
	}
	// The second producer started before the second of those heartbeats and probes at once and on every
	// interval, so it had its chances; it stayed silent because its apiserver never answered.
	if n := len(b.messages(schemas.ClusterHeartbeatSubject("dead"))); n != 0 {
		t.Errorf("%d heartbeats from a cluster whose apiserver does not answer", n)
	}
}

func TestHeartbeatFor(t *testing.T) {
	tests := []struct {
		timeout, want time.Duration
	}{
		{0, producers.DefaultHeartbeat},
		{30 * time.Second, producers.DefaultHeartbeat},
		{15 * time.Second, 3 * time.Second},
		{6 * time.Second, 1200 * time.Millisecond},
		{time.Second, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := producers.HeartbeatFor(tt.timeout); got != tt.want {
			t.Errorf("HeartbeatFor(%s) = %s, want %s", tt.timeout, got, tt.want)
		}
	}
}
