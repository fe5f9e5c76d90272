package bus_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

// pullDropper sits between NATS clients and a server and drops the first pull requests the clients send,
// as a server does when it loses a waiting request without a word: the client then hears nothing until
// its pull heartbeat is missed.
type pullDropper struct {
	listener net.Listener
	target   string
	toDrop   atomic.Int32
	dropped  atomic.Int32
	wg       sync.WaitGroup
}

func startPullDropper(t *testing.T, target string, drop int32) *pullDropper {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pullDropper{listener: l, target: target}
	p.toDrop.Store(drop)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = l.Close()
		p.wg.Wait()
	})
	return p
}

func (p *pullDropper) url() string { return "nats://" + p.listener.Addr().String() }

func (p *pullDropper) accept() {
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
func (p *pullDropper) forward(server io.Writer, client io.Reader) {
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

// TestConsumeLoopRecoversFromALostPullRequest: a pull request the server never sees (or drops silently)
// leaves the loop waiting only until its pull heartbeat is missed, seconds rather than the client
// library's default of 30 s, and then the loop pulls again and delivers what waits.
func TestConsumeLoopRecoversFromALostPullRequest(t *testing.T) {
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log, logs := testLogger(t)
	nc, js, err := bus.Connect(srv.ClientURL(), "setup")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if err := bus.ProvisionStreams(ctx, js, schemas.DefaultStreamOptions(), log); err != nil {
		t.Fatal(err)
	}

	dropper := startPullDropper(t, strings.TrimPrefix(srv.ClientURL(), "nats://"), 1)
	consumerConn, consumerJS, err := bus.Connect(dropper.url(), "consumer", nats.MaxReconnects(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(consumerConn.Close)
	stream, cfg := schemas.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(ctx, consumerJS, stream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, Handle: func(context.Context, bus.Delivery) error {
		handled.Add(1)
		return nil
	}}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()

	eventually(t, "the first pull request dropped", func() bool { return dropper.dropped.Load() == 1 })
	subject, payload := workloadEvent(t, "web", "uid-web", "1")
	e, err := schemas.NewEvent(schemas.TypeWorkloadChanged, "/test", subject, schemas.WorkloadChangedID(payload.Ref(), "1"), payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.NewPublisher(js).Publish(ctx, subject, e); err != nil {
		t.Fatal(err)
	}
	// eventually gives up after 20 s, before the 30 s a lost request cost with the library's defaults.
	eventually(t, "the event handled after the lost pull request", func() bool { return handled.Load() == 1 })
	if !strings.Contains(logs.String(), "pull request") {
		t.Errorf("the missed heartbeat was not logged:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop ended with %v", err)
	}
}
