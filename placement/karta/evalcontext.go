package karta

import (
	"context"
	"sync"
	"time"
)

// evalContext is the deadline of one analysis's jq runs. gojq polls Done before every opcode, and
// a context.WithTimeout context loads its channel through an atomic value on every call, which was
// a tenth of an analysis; here the channel is made up front and Done only returns it.
type evalContext struct {
	done     chan struct{}
	deadline time.Time
	timer    *time.Timer
	stopOnce sync.Once
	err      error // set before done is closed
}

// newEvalContext returns a context that is done after timeout, and its release function.
func newEvalContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx := &evalContext{done: make(chan struct{}), deadline: time.Now().Add(timeout)}
	ctx.timer = time.AfterFunc(timeout, func() { ctx.stop(context.DeadlineExceeded) })
	return ctx, func() {
		ctx.timer.Stop()
		ctx.stop(context.Canceled)
	}
}

func (c *evalContext) stop(err error) {
	c.stopOnce.Do(func() {
		c.err = err
		close(c.done)
	})
}

func (c *evalContext) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *evalContext) Done() <-chan struct{}       { return c.done }
func (c *evalContext) Value(any) any               { return nil }

func (c *evalContext) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}
