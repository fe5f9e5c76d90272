package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/natscluster"
	"github.com/fleetflow/fleetflow/internal/netlab"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// runAsFleetflow, set in a child's environment, makes the test binary run fleetflow's main instead of the tests:
// a test starts fleetflow processes without building the binary.
const runAsFleetflow = "FLEETFLOW_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	natscluster.RunNodeIfAsked()
	if os.Getenv(runAsFleetflow) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPlacerPausedPastItsLeaseStoresNothing runs two placer processes on one NATS server through a burst of
// workloads. The leader is stopped (SIGSTOP) in the middle of its work, past its lease; the standby takes over and
// places what follows. Continued (SIGCONT), the first one finds itself fenced out: nothing it publishes from
// then on is stored, and it stands by. Every workload ends up decided once.
func TestPlacerPausedPastItsLeaseStoresNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs placer processes for about half a minute")
	}
	takeOverMidBurst(t, "127.0.0.1:0", nil, func(first *placerProcess) func() {
		if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := first.cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestPlacerCutOffPastItsLeaseStoresNothing is the same run with the leader running on, but cut off from NATS: its
// process is in a network namespace of its own whose link goes down in the middle of its work. Past its lease it
// stands by on its own, the standby takes over, and once the link is up again nothing the first one publishes
// is stored, including what its stalled connection still carried from before. Every workload ends up decided once.
func TestPlacerCutOffPastItsLeaseStoresNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("makes a network namespace and runs placer processes for about half a minute")
	}
	lab := netlab.ForTest(t)
	host, err := lab.AddHost()
	if err != nil {
		t.Fatal(err)
	}
	// The server listens on the root namespace's address on the bridge, where the first placer reaches it.
	takeOverMidBurst(t, lab.Gateway()+":0", host, func(first *placerProcess) func() {
		if err := host.Cut(); err != nil {
			t.Fatal(err)
		}
		return func() {
			// Its metrics come from inside its namespace: it gives up the lead on its own, cut off.
			e2eenv.Eventually(t, e2eenv.Settle, "the cut-off placer standing by", first.leads(t, false))
			if err := host.Heal(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// takeOverMidBurst runs a NATS server listening on listen and two placer processes on it, the first (the leader)
// in firstHost's namespace when given, and submits a burst of workloads. A few dozen decisions in, interrupt
// takes the first one away from its work; once the second one leads, what interrupt returned gives it back.
// The first must then stand by, every workload be decided once, and nothing the first one published after the
// second took over be stored.
func takeOverMidBurst(t *testing.T, listen string, firstHost *netlab.Host, interrupt func(first *placerProcess) (resume func())) {
	ctx := t.Context()
	server, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Listen: listen})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	b, err := app.OpenBus(ctx, app.BusOptions{URL: server.ClientURL(), Streams: streams.DefaultOptions()}, t.Name(),
		e2eenv.TestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	publish := func(eventType, subject, id string, payload schemas.Payload) {
		t.Helper()
		e, err := codec.NewEvent(eventType, "/test", subject, id, payload)
		if err == nil {
			_, err = b.Publisher.Publish(ctx, subject, e)
		}
		if err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	policy := eventtest.Policy("any", map[string]any{})
	publish(schemas.TypePolicyChanged, schemas.PolicySubject(policy.Ref()), "policy", policy)
	publish(schemas.TypeClusterChanged, schemas.ClusterSpecSubject("east"), "cluster", eventtest.Cluster("east", nil))
	publish(schemas.TypeClusterHeartbeat, schemas.ClusterHeartbeatSubject("east"), "heartbeat",
		&schemas.ClusterHeartbeat{Cluster: "east", Time: time.Now()})
	publish(schemas.TypeClusterAPIs, schemas.ClusterAPIsSubject("east"), "apis",
		&schemas.ClusterAPIs{Cluster: "east", APIs: []string{"apps/v1/Deployment"}})
	publish(schemas.TypeNodeChanged, schemas.NodeSubject("east", "n1"), "node", &schemas.NodeState{Cluster: "east", Name: "n1",
		Ready: true, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10000"),
			corev1.ResourcePods: resource.MustParse("100000")}})

	first := startPlacer(t, server.ClientURL(), "first", firstHost)
	e2eenv.Eventually(t, e2eenv.Settle, "the first placer leading", first.leads(t, true))
	second := startPlacer(t, server.ClientURL(), "second", nil)
	e2eenv.Eventually(t, e2eenv.Settle, "the second placer standing by", second.leads(t, false))

	// A burst of workloads, so the leader is interrupted in the middle of deciding and publishing.
	const count = 1500
	var submitted sync.WaitGroup
	submitted.Go(func() {
		for i := range count {
			w := eventtest.Deployment(fmt.Sprintf("w-%d", i), "10m")
			e, err := codec.NewEvent(schemas.TypeWorkloadChanged, "/test", schemas.WorkloadSubject(w.Ref()), w.Ref().Name, w)
			if err == nil {
				_, err = b.Publisher.Publish(ctx, schemas.WorkloadSubject(w.Ref()), e)
			}
			if err != nil {
				t.Errorf("submit %s: %v", w.Ref().Name, err)
				return
			}
		}
	})
	e2eenv.Eventually(t, e2eenv.Settle, "decisions by the first placer", func() bool { return decided(t, b) >= 50 })
	resume := interrupt(first)
	e2eenv.Eventually(t, e2eenv.Settle, "the second placer taking over", second.leads(t, true))
	resume()
	e2eenv.Eventually(t, e2eenv.Settle, "the first placer standing by", first.leads(t, false))
	submitted.Wait()
	e2eenv.Eventually(t, e2eenv.Settle, "every workload decided", func() bool { return decided(t, b) == count })
	if stored := e2eenv.Total(e2eenv.ClusterDecisions(t, b.JetStream)); stored != count {
		t.Errorf("%d decisions stored for %d workloads, want one each", stored, count)
	}
	checkFencedOut(t, b)
	// Said once it gave the lease back, which a cut-off placer tries for a while after it stopped leading. (On
	// failure its log is in the test's.)
	e2eenv.Eventually(t, e2eenv.Settle, "the first placer saying it lost the lease", func() bool {
		return strings.Contains(first.log(t), "lost the placer lease")
	})
}

// checkFencedOut reads both streams the placers publish to and checks that exactly two leaderships were recorded,
// and that the first one stored nothing after the second one's fence record.
func checkFencedOut(t *testing.T, b *app.Bus) {
	t.Helper()
	// Leaderships in the order they took the lease; what each stored, by stream sequence.
	var leaders []string
	fences := map[string]map[string]uint64{} // stream -> leadership -> sequence of its record
	lastStored := map[string]map[string]uint64{}
	for _, stream := range []string{schemas.StreamEvents, schemas.StreamDecisions} {
		fences[stream], lastStored[stream] = map[string]uint64{}, map[string]uint64{}
		err := bus.ReadMessages(t.Context(), b.JetStream, stream, jetstream.OrderedConsumerConfig{}, func(msg jetstream.Msg, _ time.Time) {
			meta, err := msg.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			placer := msg.Headers().Get(schemas.HeaderPlacer)
			if placer == "" {
				return
			}
			if msg.Subject() == schemas.FenceSubject(stream) {
				fences[stream][placer] = meta.Sequence.Stream
				if stream == schemas.StreamEvents {
					leaders = append(leaders, placer)
				}
				return
			}
			lastStored[stream][placer] = meta.Sequence.Stream
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(leaders) != 2 {
		t.Fatalf("leaderships recorded: %v, want the first placer's and the second's", leaders)
	}
	for stream, stored := range lastStored {
		if last, takeover := stored[leaders[0]], fences[stream][leaders[1]]; last > takeover {
			t.Errorf("%s: the first placer stored sequence %d after the second one took over at %d", stream, last, takeover)
		}
	}
}

type placerProcess struct {
	cmd     *exec.Cmd
	health  string // host:port of its health and metrics endpoint, as seen from its namespace
	client  *http.Client
	logPath string
}

// startPlacer runs a placer process with a 3s lease, stopped when the test ends; in host's network namespace
// when host is given (its metrics are then read from inside it, reachable while it is cut off).
func startPlacer(t *testing.T, url, name string, host *netlab.Host) *placerProcess {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &placerProcess{health: l.Addr().String(), client: http.DefaultClient, logPath: filepath.Join(t.TempDir(), name+".log")}
	_ = l.Close()
	log, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"placer", "--nats-url", url, "--lease-ttl", "3s", "--heartbeat-timeout", "10m",
		"--health-address", p.health, "--data-dir", t.TempDir()}
	p.cmd = exec.Command(os.Args[0], args...)
	if host != nil {
		p.cmd, p.client = host.Command(os.Args[0], args...), host.HTTPClient()
	}
	p.cmd.Env = append(os.Environ(), runAsFleetflow+"=1")
	p.cmd.Stdout, p.cmd.Stderr = log, log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		_ = p.cmd.Wait()
		_ = log.Close()
		if t.Failed() {
			t.Logf("%s placer log:\n%s", name, p.log(t))
		}
	})
	return p
}

// leads reports whether the placer's metrics say it holds the lease (want true) or stands by (want false).
func (p *placerProcess) leads(t *testing.T, want bool) func() bool {
	return func() bool {
		resp, err := p.client.Get("http://" + p.health + "/metrics")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return false
		}
		line := "fleetflow_placer_leader 0"
		if want {
			line = "fleetflow_placer_leader 1"
		}
		return strings.Contains(string(body), line+"\n")
	}
}

func (p *placerProcess) log(t *testing.T) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// decided counts the workloads with a decision in the decisions stream.
func decided(t *testing.T, b *app.Bus) int { return len(e2eenv.ClusterDecisions(t, b.JetStream)) }
