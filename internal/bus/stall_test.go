package bus_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/observe"
)

// TestConsumeLoopStuckHandlerFailsLiveness: a handler that does not return for longer than StallAfter fails the
// process's liveness check, naming the consumer, so Kubernetes restarts a process no event can move any more;
// once it returns, the check passes again.
func TestConsumeLoopStuckHandlerFailsLiveness(t *testing.T) {
	_, js := startJetStream(t)
	log, _ := testLogger(t)
	consumer, _, cfg := placerConsumer(t, js, log)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	loop := &bus.ConsumeLoop{Consumer: consumer, Log: log, StallAfter: 50 * time.Millisecond,
		Handle: func(context.Context, bus.Delivery) error {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
			return nil
		}}
	done := make(chan error, 1)
	go func() { done <- loop.Run(ctx) }()
	healthz := func() (int, string) {
		rec := httptest.NewRecorder()
		observe.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
		body, _ := io.ReadAll(rec.Body)
		return rec.Code, string(body)
	}
	check := "consumer " + cfg.Durable
	eventually(t, "the idle consumer's liveness check listed and passing", func() bool {
		code, body := healthz()
		return code == 200 && strings.Contains(body, "[+]"+check+" ok")
	})
	publishWorkloads(t, bus.NewPublisher(js), "stuck")
	<-entered
	eventually(t, "liveness failing while the handler is stuck", func() bool {
		code, body := healthz()
		return code == 503 && strings.Contains(body, "[-]"+check+" failed: one event's handling") &&
			strings.Contains(body, "the consumer is stuck")
	})
	close(release)
	eventually(t, "liveness passing once the handler returned", func() bool {
		code, _ := healthz()
		return code == 200
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("loop ended with %v", err)
	}
}
