package natscluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/netlab"
)

// ReadyTimeout bounds how long Start and Restart wait for the cluster to be healthy. Three nodes electing a
// meta leader take a few seconds; a loaded two-core machine running apiservers beside them, much longer.
const ReadyTimeout = 90 * time.Second

// Cluster is a running JetStream cluster of node processes.
type Cluster struct {
	nodes []*node
}

// node is one server process and what it keeps across restarts: its name, store and ports.
type node struct {
	cfg     nodeConfig
	logPath string
	host    *netlab.Host // the network namespace the node runs in; nil: the caller's, on loopback

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{} // closed when the current process has been waited for
}

// Start runs n nodes under dir (a store and a log file per node) and returns once every node reports healthy
// and the cluster has a JetStream meta leader. On error nothing it started is left running. The caller stops
// the cluster with Stop.
func Start(ctx context.Context, dir string, n int, opts ...Option) (*Cluster, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if os.Getenv(envNode) != "" {
		// A node process got here: its main did not call RunNodeIfAsked first, and would start clusters of its own.
		return nil, errors.New("natscluster: RunNodeIfAsked must be called first in main or TestMain")
	}
	if n < 1 {
		return nil, fmt.Errorf("natscluster: %d nodes, want at least 1", n)
	}
	if o.hosts != nil && len(o.hosts) != n {
		return nil, fmt.Errorf("natscluster: %d hosts for %d nodes", len(o.hosts), n)
	}
	listen, addrs := "127.0.0.1", make([]string, n)
	for i := range addrs {
		addrs[i] = "127.0.0.1"
		if o.hosts != nil {
			// Every address in its namespace: its peers and clients come over the bridge, a test's probes from
			// inside the namespace to loopback.
			listen, addrs[i] = "0.0.0.0", o.hosts[i].Addr
		}
	}
	// All ports are picked before any node starts, so that a restarted node comes back where its peers'
	// routes and the clients' URL list expect it.
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, net.JoinHostPort(addrs[j], strconv.Itoa(ports[3*j+1])))
			}
		}
		nodeDir := filepath.Join(dir, nodeName(i))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			return nil, fmt.Errorf("natscluster: %w", err)
		}
		nd := &node{
			cfg: nodeConfig{Name: nodeName(i), Listen: listen, Addr: addrs[i], StoreDir: filepath.Join(nodeDir, "jetstream"),
				ClientPort: ports[3*i], ClusterPort: ports[3*i+1], HTTPPort: ports[3*i+2], Routes: routes, TLS: o.tls},
			logPath: filepath.Join(nodeDir, "node.log"),
		}
		if o.hosts != nil {
			nd.host = o.hosts[i]
		}
		c.nodes = append(c.nodes, nd)
	}
	for i := range c.nodes {
		if err := c.nodes[i].start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Option changes how Start runs the nodes.
type Option func(*options)

type options struct {
	tls   *TLSFiles
	hosts []*netlab.Host
}

// WithTLS has every node require TLS of its clients, with files' certificate, and run its routes over TLS
// verified both ways. The certificate (GenerateTLS) is for loopback: not for nodes WithHosts.
func WithTLS(files TLSFiles) Option { return func(o *options) { o.tls = &files } }

// WithHosts runs node i in hosts[i]'s network namespace, reached at its address there, so that a test can cut
// it off from its peers and clients (netlab.Host.Cut). The cluster's own watching (WaitHealthy, MetaLeader,
// StoredMessages) goes from inside each namespace and sees a cut-off node too.
func WithHosts(hosts ...*netlab.Host) Option { return func(o *options) { o.hosts = hosts } }

// ForTest starts a cluster of n nodes in a temporary directory of t and stops it when t ends, failing t
// when it cannot start. On failure t's log gets the nodes' logs.
func ForTest(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	c, err := Start(ctx, dir, n, opts...)
	if err != nil {
		for i := range n {
			if data, readErr := os.ReadFile(filepath.Join(dir, nodeName(i), "node.log")); readErr == nil {
				t.Logf("%s log:\n%s", nodeName(i), data)
			}
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			for _, nd := range c.nodes {
				if data, err := os.ReadFile(nd.logPath); err == nil {
					t.Logf("%s log:\n%s", nd.cfg.Name, data)
				}
			}
		}
	})
	return c
}

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.nodes) }

// ClientURL is the URL of node i alone.
func (c *Cluster) ClientURL(i int) string {
	return clientURL(c.nodes[i].cfg.Addr, c.nodes[i].cfg.ClientPort)
}

// LocalURL is node i's URL from inside its own network namespace (WithHosts), for a client that dials from there
// (netlab.Host.Dial) and so reaches the node while it is cut off; without hosts it is ClientURL.
func (c *Cluster) LocalURL(i int) string { return clientURL("127.0.0.1", c.nodes[i].cfg.ClientPort) }

// ClientURLs is every node's URL, comma-separated, as nats.Connect takes a server list: a client fails over to
// another node when its own dies.
func (c *Cluster) ClientURLs() string {
	urls := make([]string, len(c.nodes))
	for i := range c.nodes {
		urls[i] = c.ClientURL(i)
	}
	return strings.Join(urls, ",")
}

// NodeName is the server name of node i, as JetStream reports leaders and peers.
func (c *Cluster) NodeName(i int) string { return c.nodes[i].cfg.Name }

// Kill stops node i with SIGKILL, as a crash would, and waits for the process to be gone.
func (c *Cluster) Kill(i int) error {
	nd := c.nodes[i]
	nd.mu.Lock()
	cmd, exited := nd.cmd, nd.exited
	nd.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("natscluster: node %s is not running", nd.cfg.Name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("natscluster: kill node %s: %w", nd.cfg.Name, err)
	}
	<-exited
	return nil
}

// Restart starts node i again on its store and ports (after Kill) and waits until every node is healthy
// again: the restarted one has rejoined and caught up with its streams.
func (c *Cluster) Restart(ctx context.Context, i int) error {
	if err := c.nodes[i].start(); err != nil {
		return err
	}
	return c.WaitHealthy(ctx)
}

// Stop ends every node and waits for them; stopping a stopped cluster does nothing.
func (c *Cluster) Stop() {
	for _, nd := range c.nodes {
		nd.stop()
	}
}

// WaitHealthy waits until every running node answers /healthz with ok (JetStream enabled, in contact with a
// meta leader, its streams and consumers current) and the nodes agree on a meta leader.
func (c *Cluster) WaitHealthy(ctx context.Context) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ReadyTimeout)
		defer cancel()
	}
	return Poll(ctx, "the nats cluster healthy with a meta leader", func() error {
		for _, nd := range c.nodes {
			if !nd.running() {
				continue
			}
			if err := nd.healthy(ctx); err != nil {
				return err
			}
		}
		_, err := c.MetaLeader(ctx)
		return err
	})
}

// MetaLeader is the index of the node that leads the JetStream meta group, as the running nodes report it.
func (c *Cluster) MetaLeader(ctx context.Context) (int, error) {
	for _, nd := range c.nodes {
		if !nd.running() {
			continue
		}
		var jsz struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		if err := nd.getJSON(ctx, "/jsz", &jsz); err != nil {
			continue
		}
		if jsz.Meta != nil && jsz.Meta.Leader != "" {
			return c.index(jsz.Meta.Leader)
		}
	}
	return -1, errors.New("no node reports a meta leader")
}

// StreamLeader is the index of the node that leads stream's Raft group.
func (c *Cluster) StreamLeader(ctx context.Context, js jetstream.JetStream, stream string) (int, error) {
	// A request sent while js's connection fails over to another node gets no answer: bounded, so that a caller
	// polling asks again instead of waiting out its whole context.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return -1, fmt.Errorf("natscluster: stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return -1, fmt.Errorf("natscluster: stream %s info: %w", stream, err)
	}
	if info.Cluster == nil || info.Cluster.Leader == "" {
		return -1, fmt.Errorf("natscluster: stream %s has no leader", stream)
	}
	return c.index(info.Cluster.Leader)
}

func (c *Cluster) index(name string) (int, error) {
	for i, nd := range c.nodes {
		if nd.cfg.Name == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("natscluster: no node is named %q", name)
}

// Poll calls f until it returns nil or ctx ends; then the error names what and f's last error. It is the
// one way this package (and its tests) wait: on a condition, never a fixed sleep. The pause between calls
// grows from 100ms to 1s, so a costly check (reading a whole stream) does not load a busy machine further.
func Poll(ctx context.Context, what string, f func() error) error {
	delay := 100 * time.Millisecond
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), err)
		case <-time.After(delay):
		}
		delay = min(2*delay, time.Second)
	}
}

func nodeName(i int) string { return "n" + strconv.Itoa(i) }

// freePorts reserves n distinct free loopback ports by holding all their listeners open at once.
func freePorts(n int) ([]int, error) {
	var ports []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("natscluster: free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// start runs the node's process; it is an error while one runs.
func (nd *node) start() error {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.cmd != nil {
		return fmt.Errorf("natscluster: node %s is running already", nd.cfg.Name)
	}
	raw, err := json.Marshal(nd.cfg)
	if err != nil {
		return fmt.Errorf("natscluster: %w", err)
	}
	logFile, err := os.OpenFile(nd.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("natscluster: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		_ = logFile.Close()
		return fmt.Errorf("natscluster: this executable: %w", err)
	}
	cmd := exec.Command(self)
	if nd.host != nil {
		cmd = nd.host.Command(self)
	}
	cmd.Env = append(os.Environ(), envNode+"="+string(raw))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = procAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = logFile.Close()
		return fmt.Errorf("natscluster: %w", err)
	}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("natscluster: start node %s: %w", nd.cfg.Name, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		nd.mu.Lock()
		if nd.cmd == cmd {
			nd.cmd, nd.stdin = nil, nil
		}
		nd.mu.Unlock()
		close(exited)
	}()
	nd.cmd, nd.stdin, nd.exited = cmd, stdin, exited
	return nil
}

// stop closes the node's stdin, which has it shut down cleanly, and kills it if it has not exited soon after.
func (nd *node) stop() {
	nd.mu.Lock()
	cmd, stdin, exited := nd.cmd, nd.stdin, nd.exited
	nd.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = stdin.Close()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}

func (nd *node) running() bool {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return nd.cmd != nil
}

// healthy asks the node's /healthz; a non-200 answer carries the reason in its body.
func (nd *node) healthy(ctx context.Context) error {
	var status struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := nd.getJSON(ctx, "/healthz", &status); err != nil {
		return err
	}
	if status.Status != "ok" {
		return fmt.Errorf("node %s: %s: %s", nd.cfg.Name, status.Status, status.Error)
	}
	return nil
}

func (nd *node) getJSON(ctx context.Context, path string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://127.0.0.1:"+strconv.Itoa(nd.cfg.HTTPPort)+path, nil)
	if err != nil {
		return fmt.Errorf("node %s: %w", nd.cfg.Name, err)
	}
	client := http.DefaultClient
	if nd.host != nil {
		client = nd.host.HTTPClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("node %s: %w", nd.cfg.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("node %s %s (HTTP %d): %w", nd.cfg.Name, path, resp.StatusCode, err)
	}
	return nil
}

// StoredMessages is how many messages node i's own replica of stream holds, read from its /jsz: how a test
// sees that a restarted node caught up, which a client cannot (its reads go to the leader).
func (c *Cluster) StoredMessages(ctx context.Context, i int, stream string) (uint64, error) {
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Msgs uint64 `json:"messages"`
				} `json:"state"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := c.nodes[i].getJSON(ctx, "/jsz?accounts=true&streams=true", &jsz); err != nil {
		return 0, err
	}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if s.Name == stream {
				return s.State.Msgs, nil
			}
		}
	}
	return 0, fmt.Errorf("node %s holds no replica of stream %s", c.nodes[i].cfg.Name, stream)
}
