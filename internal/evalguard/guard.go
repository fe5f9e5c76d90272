package evalguard

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

const (
	// slots bounds the evaluations recorded at once (the placer's and the status writer's goroutines evaluate
	// concurrently); one past them goes unrecorded.
	slots = 8
	// slotSize holds an RI's name and digest.
	slotSize = 512
)

// empty clears slots; it is only read.
var empty = make([]byte, slots*slotSize)

// File records evaluations in progress in its slots, one write when each starts and one when it ends.
type File struct {
	f    *os.File
	mu   sync.Mutex
	free []int
}

// maxRefused bounds the refused identities kept, the most recent first.
const maxRefused = 64

// Open opens (or creates) the record at path. It returns the identities to refuse: those a process left behind in
// it, which died evaluating them, and those refused before (kept in path.refused, so a process that refused one
// and stopped cleanly does not leave the next to evaluate it again and die). It empties the record.
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
	if _, err := f.WriteAt(empty, 0); err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("record of RI evaluations %s: %w", path, err)
	}
	refused, err := keepRefused(path+".refused", leftBehind)
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	g := &File{f: f}
	for i := range slots {
		g.free = append(g.free, i)
	}
	return g, refused, nil
}

// keepRefused adds newly refused identities to those in the file at path, and returns them all.
func keepRefused(path string, newly []string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("refused RI versions %s: %w", path, err)
	}
	refused := slices.Clone(newly)
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && !slices.Contains(refused, line) {
			refused = append(refused, line)
		}
	}
	refused = refused[:min(len(refused), maxRefused)]
	if len(newly) > 0 {
		if err := os.WriteFile(path, []byte(strings.Join(refused, "\n")+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("refused RI versions %s: %w", path, err)
		}
	}
	return refused, nil
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
		_, _ = g.f.WriteAt(empty[:slotSize], int64(slot*slotSize))
		g.mu.Lock()
		g.free = append(g.free, slot)
		g.mu.Unlock()
	}
}

// Close empties the record and closes it: a process that stops cleanly leaves nothing behind, whatever its
// goroutines were evaluating when it was told to stop.
func (g *File) Close() error {
	_, err := g.f.WriteAt(empty, 0)
	if closeErr := g.f.Close(); err == nil {
		err = closeErr
	}
	return err
}
