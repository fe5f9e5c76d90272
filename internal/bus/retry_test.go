package bus_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
)

func TestTransient(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"nil", context.Background(), nil, false},
		{"no response from stream", context.Background(), fmt.Errorf("publish: %w", jetstream.ErrNoStreamResponse), true},
		{"no responders", context.Background(), nats.ErrNoResponders, true},
		{"request timed out", context.Background(), fmt.Errorf("last message: %w", context.DeadlineExceeded), true},
		{"caller's context ended", cancelled, context.DeadlineExceeded, false},
		{"cluster unavailable (503)", context.Background(), &jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{"message not found", context.Background(), jetstream.ErrMsgNotFound, false},
		{"connection closed", context.Background(), nats.ErrConnectionClosed, false},
		{"other", context.Background(), errors.New("bad request"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := bus.Transient(tt.ctx, tt.err); got != tt.want {
				t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestRetryTransient(t *testing.T) {
	tests := []struct {
		name      string
		errs      []error // what successive calls return; nil after the list
		wantCalls int
		wantErr   bool
	}{
		{"succeeds at once", nil, 1, false},
		{"through an election", []error{jetstream.ErrNoStreamResponse, nats.ErrNoResponders}, 3, false},
		{"not transient", []error{errors.New("bad request"), nil}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			calls := 0
			err := bus.RetryTransient(ctx, func() error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if (err != nil) != tt.wantErr || calls != tt.wantCalls {
				t.Errorf("RetryTransient: %v after %d calls, want error %v after %d", err, calls, tt.wantErr, tt.wantCalls)
			}
		})
	}
}
