package logbuf

import (
	"strings"
	"sync"
)

// Buffer is a goroutine-safe in-memory writer, typically under a slog handler.
type Buffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

// Contains reports whether s was written.
func (b *Buffer) Contains(s string) bool { return strings.Contains(b.String(), s) }
