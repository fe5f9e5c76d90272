package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/bus"
)

func TestLeaseHeldUntilItsDeadline(t *testing.T) {
	l := &lease{}
	if l.held() {
		t.Error("a lease never taken counts as held")
	}
	l.validUntil.Store(time.Now().Add(time.Minute).UnixNano())
	if !l.held() {
		t.Error("a lease within its deadline does not count as held")
	}
	l.validUntil.Store(time.Now().Add(-time.Millisecond).UnixNano())
	if l.held() {
		t.Error("a lease past its deadline still counts as held")
	}
}

// TestFencedHandlerStopsPastTheLease: while the lease is held events are handled; once it is not, the event
// is not handled, the leader is told the lease is lost, and the handler fails so the event is handed back.
func TestFencedHandlerStopsPastTheLease(t *testing.T) {
	tests := []struct {
		name     string
		held     bool
		wantCall bool
		wantLost bool
	}{
		{name: "held: handled", held: true, wantCall: true},
		{name: "past the deadline: handed back", held: false, wantLost: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			var lostWith error
			handle := fenced(func() bool { return tt.held }, func(err error) { lostWith = err },
				func(context.Context, bus.Delivery) error { called = true; return nil })
			err := handle(t.Context(), bus.Delivery{})
			if called != tt.wantCall {
				t.Errorf("handler called = %v, want %v", called, tt.wantCall)
			}
			if (lostWith != nil) != tt.wantLost || (tt.wantLost && !errors.Is(lostWith, errLeaseLost)) {
				t.Errorf("lost with %v, want lost = %v (errLeaseLost)", lostWith, tt.wantLost)
			}
			if (err != nil) != tt.wantLost {
				t.Errorf("handler error = %v, want an error only when the lease is lost", err)
			}
		})
	}
}
