package netlab

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Lab is a bridge in the root namespace with a /24 of its own and the hosts joined to it.
type Lab struct {
	id     string // random, in every name the lab makes, so that parallel or leftover labs do not clash
	bridge string
	subnet string // the first three octets, "10.251.17"

	mu     sync.Mutex
	hosts  []*Host
	closed bool
}

// Host is a network namespace with one interface on the lab's bridge.
type Host struct {
	// Name is the namespace's name, as ip netns lists it.
	Name string
	// Addr is the host's address on the bridge.
	Addr string
	// link is the root side of the veth pair: taking it down cuts the host off.
	link string
}

// New makes a bridge on a free 10.251.x.0/24 (the root namespace has x.1 on it). It fails when this process
// cannot make links or namespaces (not root, no ip, a sandbox without network namespaces).
func New() (*Lab, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("netlab: needs root to make network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	raw := make([]byte, 3)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	l := &Lab{id: hex.EncodeToString(raw)}
	// Tried first, so that a sandbox that lets links be made but not namespaces is told apart before any host.
	probe := "ffns-" + l.id + "-probe"
	if err := ip("netns", "add", probe); err != nil {
		return nil, err
	}
	if err := ip("netns", "del", probe); err != nil {
		return nil, err
	}
	l.bridge = "ffbr" + l.id
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	l.subnet = subnet
	for _, args := range [][]string{
		{"link", "add", l.bridge, "type", "bridge"},
		{"addr", "add", l.subnet + ".1/24", "dev", l.bridge},
		{"link", "set", l.bridge, "up"},
	} {
		if err := ip(args...); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// ForTest makes a lab that is taken down when t ends, or skips t (saying why) where none can be made.
func ForTest(t testing.TB) *Lab {
	t.Helper()
	l, err := New()
	if err != nil {
		t.Skipf("cannot make network namespaces here: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

// Gateway is the root namespace's address on the bridge: where a host reaches a server the test process runs.
func (l *Lab) Gateway() string { return l.subnet + ".1" }

// AddHost makes a namespace joined to the bridge, with the next free address and its loopback up.
func (l *Lab) AddHost() (*Host, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("netlab: lab closed")
	}
	n := len(l.hosts)
	if n > 200 {
		return nil, errors.New("netlab: no address left")
	}
	h := &Host{Name: "ffns-" + l.id + "-" + strconv.Itoa(n), Addr: l.subnet + "." + strconv.Itoa(n+2),
		link: "ffv" + l.id + "-" + strconv.Itoa(n)}
	inside := "eth0"
	if err := ip("netns", "add", h.Name); err != nil {
		return nil, err
	}
	// Registered before the links exist, so that Close removes whatever part of the host got made.
	l.hosts = append(l.hosts, h)
	for _, args := range [][]string{
		{"link", "add", h.link, "type", "veth", "peer", "name", inside, "netns", h.Name},
		{"link", "set", h.link, "master", l.bridge},
		{"link", "set", h.link, "up"},
		{"-n", h.Name, "addr", "add", h.Addr + "/24", "dev", inside},
		{"-n", h.Name, "link", "set", inside, "up"},
		{"-n", h.Name, "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// Close deletes every namespace and link the lab made; it reports nothing, as it runs in cleanups. Processes
// still inside a namespace keep it alive (unnamed) until they end: stop them first.
func (l *Lab) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	for _, h := range l.hosts {
		_ = ip("link", "del", h.link) // deletes its peer in the namespace too
		_ = ip("netns", "del", h.Name)
	}
	_ = ip("link", "del", l.bridge)
}

// Cut takes the host's link down: nothing passes between it and the bridge (the other hosts and the root
// namespace) until Heal. Established TCP connections are not reset; they stall, as across a real partition.
func (h *Host) Cut() error { return ip("link", "set", h.link, "down") }

// Heal brings the host's link up again.
func (h *Host) Heal() error { return ip("link", "set", h.link, "up") }

// Command is name run with args inside the host's namespace (through ip netns exec, which execs it: the
// process is the command's own, and signals reach it).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// DialContext opens a connection from inside the host's namespace, as a process running there would; it works
// while the host is cut off (to the host's own addresses).
func (h *Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return dialIn(ctx, "/run/netns/"+h.Name, network, address)
}

// Dial is DialContext without a context, for clients that take a dialer of that shape (nats.CustomDialer).
func (h *Host) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.DialContext(ctx, network, address)
}

// HTTPClient is an HTTP client whose connections start inside the host's namespace.
func (h *Host) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: h.DialContext, DisableKeepAlives: true},
		Timeout: 10 * time.Second}
}

// freeSubnet picks a random 10.251.x.0/24 that no address or route of the root namespace is in.
func freeSubnet() (string, error) {
	var used bytes.Buffer
	for _, args := range [][]string{{"-o", "addr"}, {"route"}} {
		out, err := exec.Command("ip", args...).Output()
		if err != nil {
			return "", fmt.Errorf("netlab: ip %s: %w", strings.Join(args, " "), err)
		}
		used.Write(out)
	}
	for range 50 {
		x, err := rand.Int(rand.Reader, big.NewInt(256))
		if err != nil {
			return "", fmt.Errorf("netlab: %w", err)
		}
		subnet := "10.251." + x.String()
		if !strings.Contains(used.String(), subnet+".") {
			return subnet, nil
		}
	}
	return "", errors.New("netlab: no free 10.251.x.0/24")
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netlab: ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}
