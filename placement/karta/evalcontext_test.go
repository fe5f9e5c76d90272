package karta

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestEvalContext(t *testing.T) {
	ctx, release := newEvalContext(time.Hour)
	if ctx.Err() != nil {
		t.Fatalf("fresh context has error %v", ctx.Err())
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < 59*time.Minute {
		t.Fatalf("deadline %v %v, want about an hour away", d, ok)
	}
	release()
	release() // releasing twice is harmless
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("released context has error %v, want Canceled", ctx.Err())
	}

	ctx, release = newEvalContext(time.Nanosecond)
	defer release()
	<-ctx.Done() // the timer closes it; the test would hang (and time out) otherwise
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("expired context has error %v, want DeadlineExceeded", ctx.Err())
	}
}
