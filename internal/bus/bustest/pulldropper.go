package bustest

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// PullDropper sits between NATS clients and a server and drops the first pull requests the clients send.
// The client then believes a request waits at the server when none does, the state a client's iterator
// can reach by itself (see bus.PullOptions), and hears nothing until its pull heartbeat is missed.
type PullDropper struct {
	listener net.Listener
	target   string
	toDrop   atomic.Int32
	dropped  atomic.Int32 // read with Dropped
	wg       sync.WaitGroup
}

// StartPullDropper listens on a random local port and forwards every connection to target (host:port),
// dropping the first drop pull requests; it stops with the test.
func StartPullDropper(t testing.TB, target string, drop int32) *PullDropper {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &PullDropper{listener: l, target: target}
	p.toDrop.Store(drop)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = l.Close()
		p.wg.Wait()
	})
	return p
}

// URL is where clients connect instead of the server.
func (p *PullDropper) URL() string { return "nats://" + p.listener.Addr().String() }

func (p *PullDropper) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			return
		}
		closeBoth := func() { _ = client.Close(); _ = server.Close() }
		p.wg.Go(func() { _, _ = io.Copy(client, server); closeBoth() })
		p.wg.Go(func() { p.forward(server, client); closeBoth() })
	}
}

// forward copies the client's protocol to the server, leaving out the pull requests it was told to drop.
func (p *PullDropper) forward(server io.Writer, client io.Reader) {
	r := bufio.NewReader(client)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		out := []byte(line)
		fields := strings.Fields(line)
		if len(fields) >= 3 && (fields[0] == "PUB" || fields[0] == "HPUB") {
			size, err := strconv.Atoi(fields[len(fields)-1])
			if err != nil {
				return
			}
			payload := make([]byte, size+2) // and its CRLF
			if _, err := io.ReadFull(r, payload); err != nil {
				return
			}
			if strings.HasPrefix(fields[1], "$JS.API.CONSUMER.MSG.NEXT.") && p.toDrop.Add(-1) >= 0 {
				p.dropped.Add(1)
				continue
			}
			out = append(out, payload...)
		}
		if _, err := server.Write(out); err != nil {
			return
		}
	}
}

// Dropped counts the pull requests dropped so far.
func (p *PullDropper) Dropped() int32 { return p.dropped.Load() }
