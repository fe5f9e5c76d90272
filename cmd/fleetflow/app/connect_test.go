package app_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// freeAddress is a loopback address no server listens on (yet).
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestOpenBusWaitsForAServerStartedAfterIt: a part started before its NATS server waits for it, not ready
// meanwhile, and connects once it listens; a part given up on (its context done) says which URL it waited for.
func TestOpenBusWaitsForAServerStartedAfterIt(t *testing.T) {
	addr := freeAddress(t)
	url := "nats://" + addr
	opened := make(chan error, 1)
	go func() {
		b, err := app.OpenBus(t.Context(), app.BusOptions{URL: url, Streams: streams.DefaultOptions()}, t.Name(), slog.New(slog.DiscardHandler))
		if err == nil {
			t.Cleanup(b.Close)
		}
		opened <- err
	}()
	readyz := func() (int, string) {
		rec := httptest.NewRecorder()
		observe.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	eventually(t, "readyz saying it waits for the server", func() bool {
		code, body := readyz()
		return code == http.StatusServiceUnavailable && strings.Contains(body, "[-]nats-connecting failed")
	})
	server, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("OpenBus once the server listened: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("OpenBus did not connect within 30 s of the server listening")
	}
	if _, body := readyz(); strings.Contains(body, "nats-connecting") {
		t.Errorf("readyz still lists the connecting check once connected:\n%s", body)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	nobody := "nats://" + freeAddress(t)
	if _, err := app.OpenBus(ctx, app.BusOptions{URL: nobody, Streams: streams.DefaultOptions()}, t.Name(), slog.New(slog.DiscardHandler)); err == nil ||
		!strings.Contains(err.Error(), nobody) {
		t.Errorf("OpenBus with no server and a done context = %v, want an error naming %s", err, nobody)
	}
}

// TestConnectWaitsOnlyForWhatWaitingCures: a server that refuses or does not answer in time is waited for; a
// name that does not resolve, or a server refusing the credentials, is not.
func TestConnectWaitsOnlyForWhatWaitingCures(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"no server listening", fmt.Errorf("connect: %w", nats.ErrNoServers), true},
		{"a request timing out", nats.ErrTimeout, true},
		{"a dial timing out", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutError{}}, true},
		{"a name that does not resolve", &net.DNSError{Err: "no such host", Name: "nats.example", IsNotFound: true}, false},
		{"credentials refused", nats.ErrAuthorization, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := app.Unanswered(tt.err); got != tt.want {
				t.Errorf("waited for %v: %t, want %t", tt.err, got, tt.want)
			}
		})
	}
}

// timeoutError is a network error that timed out.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
