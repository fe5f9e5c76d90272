package ui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/consumers/ui/model"
)

// RunOptions configure a running view.
type RunOptions struct {
	// Listen is the address to serve on; empty is DefaultListen.
	Listen string
	// Token, when not empty, is required of every request.
	Token string
	// HeartbeatTimeout is how long a silent cluster is still shown Ready; zero is the placer's default.
	HeartbeatTimeout time.Duration
	// Ready, when set, is called with the address served on once the view listens.
	Ready func(addr string)
}

// Run serves the view of the streams of js until ctx is done.
func Run(ctx context.Context, js jetstream.JetStream, opts RunOptions, log *slog.Logger) error {
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if opts.Token == "" && !loopback(opts.Listen) {
		log.Warn("the fleet view listens beyond this machine with no token: anyone who reaches it reads the fleet; "+
			"give --token-file or $"+TokenEnv, "address", opts.Listen)
	}
	m := model.New(model.Options{HeartbeatTimeout: opts.HeartbeatTimeout})
	srv, err := NewServer(Config{Model: m, Streams: &NATSStreams{JS: js}, Token: opts.Token, Log: log})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	addr, served, err := Serve(ctx, opts.Listen, srv.Handler(), log)
	if err != nil {
		return err
	}
	if opts.Ready != nil {
		opts.Ready(addr)
	}
	followed := make(chan error, 1)
	go func() { followed <- model.Follow(ctx, js, m, log) }()
	var other error
	select {
	case err = <-followed:
		cancel()
		other = <-served
	case err = <-served:
		cancel()
		other = <-followed
	}
	if err == nil || errors.Is(err, context.Canceled) {
		err = other
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("ui: %w", err)
	}
	return nil
}

// loopback reports whether addr listens on this machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
