package natscluster_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/internal/netlab"
)

func TestMain(m *testing.M) {
	natscluster.RunNodeIfAsked()
	os.Exit(m.Run())
}

func connect(t *testing.T, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func TestClusterForms(t *testing.T) {
	c := natscluster.ForTest(t, 3)
	js := connect(t, c.ClientURLs())
	ctx := t.Context()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream account info on the cluster: %v", err)
	}
	leader, err := c.MetaLeader(ctx)
	if err != nil || leader < 0 || leader >= c.Size() {
		t.Fatalf("meta leader %d, %v; want a node of %d", leader, err, c.Size())
	}
}

// TestStreamSurvivesKill kills one node of an R3 stream with SIGKILL between two batches of publishes: the
// stream keeps accepting them (after a new leader is elected, when it led), and the node, restarted on its
// store, catches up with every message.
func TestStreamSurvivesKill(t *testing.T) {
	const stream, batch = "FAULTS", 50
	tests := []struct {
		name   string
		victim func(c *natscluster.Cluster, leader int) int
	}{
		{"stream leader", func(_ *natscluster.Cluster, leader int) int { return leader }},
		{"follower", func(c *natscluster.Cluster, leader int) int { return (leader + 1) % c.Size() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := natscluster.ForTest(t, 3)
			js := connect(t, c.ClientURLs())
			ctx, cancel := context.WithTimeout(t.Context(), 2*natscluster.ReadyTimeout)
			defer cancel()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"faults.>"},
				Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
				t.Fatal(err)
			}
			publish := func(from, to int) { publishRange(ctx, t, js, "faults", from, to) }
			publish(0, batch)
			leader, err := c.StreamLeader(ctx, js, stream)
			if err != nil {
				t.Fatal(err)
			}
			victim := tt.victim(c, leader)
			if err := c.Kill(victim); err != nil {
				t.Fatal(err)
			}
			publish(batch, 2*batch)
			if err := natscluster.Poll(ctx, "a stream leader on a live node", func() error {
				l, err := c.StreamLeader(ctx, js, stream)
				if err == nil && l == victim {
					return fmt.Errorf("the killed node %s still leads", c.NodeName(victim))
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if err := c.Restart(ctx, victim); err != nil {
				t.Fatal(err)
			}
			if err := natscluster.Poll(ctx, "the restarted node caught up", func() error {
				n, err := c.StoredMessages(ctx, victim, stream)
				if err == nil && n != 2*batch {
					return fmt.Errorf("node %s holds %d messages, want %d", c.NodeName(victim), n, 2*batch)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			info, err := mustStream(ctx, t, js, stream).Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 2*batch {
				t.Errorf("stream holds %d messages, want %d (none lost, none twice)", info.State.Msgs, 2*batch)
			}
		})
	}
}

// TestStreamLeaderCutOff runs each node in a network namespace of its own and cuts the leader of an R3 stream
// off from the other two between two batches of publishes. Cut off, the old leader stores nothing (a publish
// through it alone fails); the other two elect a new leader and keep storing. Healed, the old leader catches up
// with every message, and the one it was given while cut off is nowhere.
func TestStreamLeaderCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("makes network namespaces and waits out elections")
	}
	const stream, batch = "PARTITION", 50
	lab := netlab.ForTest(t)
	hosts := make([]*netlab.Host, 3)
	for i := range hosts {
		var err error
		if hosts[i], err = lab.AddHost(); err != nil {
			t.Fatal(err)
		}
	}
	c := natscluster.ForTest(t, 3, natscluster.WithHosts(hosts...))
	// Pings every second: a connection to the cut-off node stalls rather than breaks, and only missed pings
	// tell the client to fail over.
	js := connect(t, c.ClientURLs(), nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2))
	ctx, cancel := context.WithTimeout(t.Context(), 2*natscluster.ReadyTimeout)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{"part.>"},
		Replicas: 3, Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	publish := func(from, to int) { publishRange(ctx, t, js, "part", from, to) }
	publish(0, batch)
	before, err := c.StreamLeader(ctx, js, stream)
	if err != nil {
		t.Fatal(err)
	}
	// Moved first, as the e2e test moves it to the node its pipeline is connected to.
	leader := (before + 1) % c.Size()
	if err := c.MoveStreamLeader(ctx, js, stream, leader); err != nil {
		t.Fatal(err)
	}
	if err := hosts[leader].Cut(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cut off %s, the leader of %s", c.NodeName(leader), stream)
	probe, cancelProbe := context.WithTimeout(ctx, 5*time.Second)
	err = c.PublishVia(probe, leader, "part.probe", []byte("minority"), "probe")
	cancelProbe()
	if err == nil {
		t.Fatalf("node %s stored a publish while cut off from the other replicas", c.NodeName(leader))
	}
	t.Logf("a publish through the cut-off leader alone failed: %v", err)
	publish(batch, 2*batch)
	if err := natscluster.Poll(ctx, "a stream leader on the majority side", func() error {
		l, err := c.StreamLeader(ctx, js, stream)
		if err == nil && l == leader {
			return fmt.Errorf("the cut-off node %s still leads", c.NodeName(leader))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := hosts[leader].Heal(); err != nil {
		t.Fatal(err)
	}
	for i := range c.Size() {
		if err := natscluster.Poll(ctx, "every replica caught up", func() error {
			n, err := c.StoredMessages(ctx, i, stream)
			if err == nil && n != 2*batch {
				return fmt.Errorf("node %s holds %d messages, want %d", c.NodeName(i), n, 2*batch)
			}
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	s := mustStream(ctx, t, js, stream)
	if _, err := s.GetLastMsgForSubject(ctx, "part.probe"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the publish made through the cut-off leader: %v, want it not stored", err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 2*batch {
		t.Errorf("stream holds %d messages, want %d (none lost, none twice)", info.State.Msgs, 2*batch)
	}
}

// publishRange publishes messages from to to-1 on prefix.<i>, each with its own message id, retrying each until
// it is stored: a publish during an election finds no leader; a later one does.
func publishRange(ctx context.Context, t *testing.T, js jetstream.JetStream, prefix string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := natscluster.Poll(ctx, fmt.Sprintf("publish %d stored", i), func() error {
			// Each attempt has its own timeout: a request sent while the client reconnects to another node
			// gets no answer, and would otherwise wait out the whole test.
			attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			_, err := js.Publish(attempt, fmt.Sprintf("%s.%d", prefix, i), []byte("x"), jetstream.WithMsgID(fmt.Sprintf("m-%d", i)))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func mustStream(ctx context.Context, t *testing.T, js jetstream.JetStream, name string) jetstream.Stream {
	t.Helper()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPoll(t *testing.T) {
	tests := []struct {
		name    string
		failFor int
		timeout time.Duration
		wantErr bool
	}{
		{"holds at once", 0, time.Second, false},
		{"holds after tries", 3, 5 * time.Second, false},
		{"never holds", 1 << 30, 300 * time.Millisecond, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			calls := 0
			err := natscluster.Poll(ctx, "the condition", func() error {
				calls++
				if calls <= tt.failFor {
					return fmt.Errorf("try %d", calls)
				}
				return nil
			})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Poll: %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
