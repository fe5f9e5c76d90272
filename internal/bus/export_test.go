package bus

import (
	"testing"
	"time"
)

// SetRetryDelay makes the loops retry a failed handling after delay until t ends; t must stop its loops
// before it ends.
func SetRetryDelay(t testing.TB, delay time.Duration) {
	old := retryDelay
	retryDelay = func(uint64) time.Duration { return delay }
	t.Cleanup(func() { retryDelay = old })
}
