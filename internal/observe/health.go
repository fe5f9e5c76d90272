package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// A check reports nil while what it watches is well.
type check struct {
	name string
	fn   func() error
}

var health struct {
	mu    sync.Mutex
	next  int
	live  map[int]check
	ready map[int]check
}

// AddLiveness adds a check that /healthz (and /readyz) run until remove is called: one that fails means the
// process cannot recover by itself (its NATS connection closed for good), so Kubernetes should restart it.
func AddLiveness(name string, fn func() error) (remove func()) {
	return addCheck(&health.live, name, fn)
}

// AddReadiness adds a check that /readyz runs until remove is called: one that fails means the process is not
// doing its work yet, or for now (connecting, rebuilding its view).
func AddReadiness(name string, fn func() error) (remove func()) {
	return addCheck(&health.ready, name, fn)
}

func addCheck(checks *map[int]check, name string, fn func() error) func() {
	health.mu.Lock()
	defer health.mu.Unlock()
	if *checks == nil {
		*checks = map[int]check{}
	}
	id := health.next
	health.next++
	(*checks)[id] = check{name: name, fn: fn}
	return func() {
		health.mu.Lock()
		defer health.mu.Unlock()
		delete(*checks, id)
	}
}

// checksOf returns the checks in the order they were added.
func checksOf(sets ...map[int]check) []check {
	health.mu.Lock()
	defer health.mu.Unlock()
	var ids []int
	byID := map[int]check{}
	for _, set := range sets {
		for id, c := range set {
			ids = append(ids, id)
			byID[id] = c
		}
	}
	slices.Sort(ids)
	out := make([]check, len(ids))
	for i, id := range ids {
		out[i] = byID[id]
	}
	return out
}

// Handler serves /healthz and /livez (liveness), /readyz (liveness and readiness) and /metrics. A health
// answer lists every check, as kube-apiserver's verbose one does, and is 503 when one fails.
func Handler() http.Handler {
	mux := http.NewServeMux()
	live := func(w http.ResponseWriter, _ *http.Request) { answer(w, "healthz", checksOf(health.live)) }
	mux.HandleFunc("/healthz", live)
	mux.HandleFunc("/livez", live)
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		answer(w, "readyz", checksOf(health.live, health.ready))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(Registry, promhttp.HandlerOpts{}))
	return mux
}

func answer(w http.ResponseWriter, endpoint string, checks []check) {
	var b strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.fn(); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: %v\n", c.name, err)
		} else {
			fmt.Fprintf(&b, "[+]%s ok\n", c.name)
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if failed {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(&b, "%s check failed\n", endpoint)
	} else {
		fmt.Fprintf(&b, "%s check passed\n", endpoint)
	}
	_, _ = w.Write([]byte(b.String()))
}

// Serve listens on addr and serves Handler until ctx is done. It returns once it listens, with the address
// (port 0 picks one), so a port already taken fails the process at its start.
func Serve(ctx context.Context, addr string, log *slog.Logger) (string, error) {
	listener, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("health and metrics address %q: %w", addr, err)
	}
	server := &http.Server{Handler: Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health and metrics server stopped", "address", listener.Addr().String(), "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	return listener.Addr().String(), nil
}
