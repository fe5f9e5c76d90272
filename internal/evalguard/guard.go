package evalguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

const (
	// slots bounds the evaluations recorded at once (the placer's and the status writer's goroutines evaluate
	// concurrently); one past them goes unrecorded.
	slots = 8
	// slotSize holds an RI's name and digest.
	slotSize = 512
)

// File records evaluations in progress in its slots, one write when each starts and one when it ends.
type File struct {
	f    *os.File
	mu   sync.Mutex
	free []int
}

// Open opens (or creates) the record at path. It returns the identities a process left behind in it, which
// died evaluating them, and empties it.
func Open(path string) (*File, []string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("record of RI evaluations %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("record of RI evaluations: %w", err)
	}
	data := make([]byte, slots*slotSize)
	n, _ := f.ReadAt(data, 0)
	var leftBehind []string
	for i := 0; i+slotSize <= n; i += slotSize {
		if identity := string(bytes.TrimRight(data[i:i+slotSize], "\x00")); identity != "" {
			leftBehind = append(leftBehind, identity)
		}
	}
	if _, err := f.WriteAt(make([]byte, slots*slotSize), 0); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("record of RI evaluations %s: %w", path, err)
	}
	g := &File{f: f}
	for i := range slots {
		g.free = append(g.free, i)
	}
	return g, leftBehind, nil
}

// Enter records that identity is being evaluated until leave is called. A record that cannot be written
// costs the guard, never the evaluation.
func (g *File) Enter(identity string) (leave func()) {
	g.mu.Lock()
	if len(g.free) == 0 {
		g.mu.Unlock()
		return func() {}
	}
	slot := g.free[len(g.free)-1]
	g.free = g.free[:len(g.free)-1]
	g.mu.Unlock()
	record := make([]byte, slotSize)
	copy(record, identity)
	_, _ = g.f.WriteAt(record, int64(slot*slotSize))
	return func() {
		_, _ = g.f.WriteAt(make([]byte, slotSize), int64(slot*slotSize))
		g.mu.Lock()
		g.free = append(g.free, slot)
		g.mu.Unlock()
	}
}

// Close empties the record and closes it: a process that stops cleanly leaves nothing behind, whatever its
// goroutines were evaluating when it was told to stop.
func (g *File) Close() error {
	_, err := g.f.WriteAt(make([]byte, slots*slotSize), 0)
	if closeErr := g.f.Close(); err == nil {
		err = closeErr
	}
	return err
}
