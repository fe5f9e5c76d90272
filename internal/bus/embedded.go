package bus

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// MaxPayload is the embedded server's message size limit. Real framework CRDs reach 2 MB and a decision
// carries its whole object, so NATS's 1 MB default is too small; an external server needs the same
// max_payload setting.
const MaxPayload = 8 << 20

// EmbeddedOptions configure an in-process NATS server with JetStream.
type EmbeddedOptions struct {
	// StoreDir holds JetStream's file storage.
	StoreDir string
	// Listen is host:port; port 0 (the default "127.0.0.1:0") picks a free port.
	Listen string
	// ServerName appears in monitoring; defaults to "fleetflow".
	ServerName string
	// Users, when any, are the only clients the server accepts, each with its own permissions (see
	// internal/natsauth); none accepts any client with every right.
	Users []*server.NkeyUser
}

// Embedded is an in-process NATS server.
type Embedded struct {
	server *server.Server
}

// StartEmbedded starts a JetStream-enabled server and waits until it accepts connections.
func StartEmbedded(opts EmbeddedOptions) (*Embedded, error) {
	host, port := "127.0.0.1", -1
	if opts.Listen != "" {
		h, p, err := net.SplitHostPort(opts.Listen)
		if err != nil {
			return nil, fmt.Errorf("embedded nats listen address %q: %w", opts.Listen, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil, fmt.Errorf("embedded nats listen address %q: port: %w", opts.Listen, err)
		}
		if n < 0 || n > 65535 {
			return nil, fmt.Errorf("embedded nats listen address %q: port %d: want 0 (any free port) to 65535", opts.Listen, n)
		}
		host = h
		if n != 0 {
			port = n
		}
	}
	if opts.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: a JetStream store directory is required")
	}
	if port > 0 {
		// The server logs nothing here and would only time out on a port it cannot take, so try it first.
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("embedded nats cannot listen on %s (another fleetflow part embedding a server there? "+
				"share it with --nats-url, or pick a free port with --nats-listen 127.0.0.1:0): %w", addr, err)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded nats cannot listen on %s: %w", addr, err)
		}
		_ = l.Close()
	}
	name := opts.ServerName
	if name == "" {
		name = "fleetflow"
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   opts.StoreDir,
		MaxPayload: MaxPayload,
		NoSigs:     true,
		NoLog:      true,
		Nkeys:      opts.Users,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("embedded nats on %s:%d did not become ready within 30s", host, port)
	}
	return &Embedded{server: srv}, nil
}

// InProcess connects a client of this process to the server without a socket: no system call per read
// and write, which on loopback TCP was a sixth of the pipeline's CPU.
func (e *Embedded) InProcess() nats.Option { return nats.InProcessServer(e.server) }

// ClientURL is the nats:// URL clients (and the nats CLI) connect to.
func (e *Embedded) ClientURL() string { return e.server.ClientURL() }

// Shutdown stops the server and waits for it.
func (e *Embedded) Shutdown() {
	e.server.Shutdown()
	e.server.WaitForShutdown()
}
