package natscluster

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/fleetflow/fleetflow/internal/bus"
)

// envNode carries a node's configuration (JSON) to the re-executed binary.
const envNode = "FLEETFLOW_NATSCLUSTER_NODE"

// clusterName is the name every node's cluster block carries; routes refuse peers of another name.
const clusterName = "fleetflow-test"

// nodeConfig is what a node process needs to know: its name, store and ports, and its peers' routes.
type nodeConfig struct {
	Name string `json:"name"`
	// Listen is the address the node listens on, Addr the one its peers and clients reach it at: both
	// 127.0.0.1, or, in a network namespace of its own, every address there and its address on the bridge.
	Listen      string   `json:"listen"`
	Addr        string   `json:"addr"`
	StoreDir    string   `json:"storeDir"`
	ClientPort  int      `json:"clientPort"`
	ClusterPort int      `json:"clusterPort"`
	HTTPPort    int      `json:"httpPort"`
	Routes      []string `json:"routes"` // host:port of each peer's cluster port
	// TLS, when set, is required of clients and routes.
	TLS *TLSFiles `json:"tls,omitempty"`
}

// RunNodeIfAsked runs a cluster node and exits when this process was started as one by Start, and returns at
// once otherwise. Call it first in main or TestMain, before flags are parsed: a node process has none of the
// caller's flags and must not run its tests.
func RunNodeIfAsked() {
	raw := os.Getenv(envNode)
	if raw == "" {
		return
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := runNode(raw, os.Stdin, log); err != nil {
		log.Error("nats cluster node failed", "error", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runNode serves until stdin closes (the parent is gone or stops it) or SIGTERM/SIGINT arrives.
func runNode(raw string, parent io.Reader, log *slog.Logger) error {
	var cfg nodeConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fmt.Errorf("node configuration in %s: %w", envNode, err)
	}
	routes := make([]string, len(cfg.Routes))
	for i, r := range cfg.Routes {
		routes[i] = "nats://" + r
	}
	opts := &server.Options{
		ServerName:      cfg.Name,
		Host:            cfg.Listen,
		Port:            cfg.ClientPort,
		ClientAdvertise: net.JoinHostPort(cfg.Addr, strconv.Itoa(cfg.ClientPort)),
		HTTPHost:        cfg.Listen,
		HTTPPort:        cfg.HTTPPort,
		JetStream:       true,
		StoreDir:        cfg.StoreDir,
		MaxPayload:      bus.MaxPayload,
		Cluster: server.ClusterOpts{Name: clusterName, Host: cfg.Listen, Port: cfg.ClusterPort,
			Advertise: net.JoinHostPort(cfg.Addr, strconv.Itoa(cfg.ClusterPort))},
		Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		NoSigs:  true,
		Logtime: true,
	}
	if cfg.TLS != nil {
		var err error
		files := &server.TLSConfigOpts{CertFile: cfg.TLS.CertFile, KeyFile: cfg.TLS.KeyFile, CaFile: cfg.TLS.CAFile}
		if opts.TLSConfig, err = server.GenTLSConfig(files); err != nil {
			return fmt.Errorf("node %s: client TLS: %w", cfg.Name, err)
		}
		opts.TLS, opts.TLSTimeout = true, 5
		// Routes verify each other's certificate both ways.
		routeFiles := *files
		routeFiles.Verify = true
		if opts.Cluster.TLSConfig, err = server.GenTLSConfig(&routeFiles); err != nil {
			return fmt.Errorf("node %s: route TLS: %w", cfg.Name, err)
		}
		// A route dials its peers as a client: it trusts the same CA it verifies them by.
		opts.Cluster.TLSConfig.RootCAs = opts.Cluster.TLSConfig.ClientCAs
		opts.Cluster.TLSTimeout = 5
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("node %s: %w", cfg.Name, err)
	}
	// To stderr, which the parent sends to the node's log file: a failed test shows what the nodes did.
	srv.ConfigureLogger()
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("node %s on port %d did not become ready within 30s", cfg.Name, cfg.ClientPort)
	}
	log.Info("nats cluster node started", "name", cfg.Name, "client", cfg.ClientPort, "cluster", cfg.ClusterPort)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	eof := make(chan struct{})
	go func() {
		// The parent holds the write end of stdin: EOF means it stopped us or died without cleaning up.
		_, _ = io.Copy(io.Discard, parent)
		close(eof)
	}()
	select {
	case <-stop:
	case <-eof:
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}

// clientURL is the nats:// URL of a node's client port at addr.
func clientURL(addr string, port int) string {
	return (&url.URL{Scheme: "nats", Host: net.JoinHostPort(addr, strconv.Itoa(port))}).String()
}
