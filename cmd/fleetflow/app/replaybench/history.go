package replaybench

import (
	"context"
	"io"

	"github.com/fleetflow/fleetflow/consumers/replay"
)

// History is a recorded history held in memory, in the order the streams stored it.
type History struct {
	Records []replay.Record
	next    int
}

// Next implements replay.History.
func (h *History) Next(ctx context.Context) (replay.Record, error) {
	if err := ctx.Err(); err != nil {
		return replay.Record{}, err
	}
	if h.next == len(h.Records) {
		return replay.Record{}, io.EOF
	}
	r := h.Records[h.next]
	h.next++
	return r, nil
}

// Close implements replay.History.
func (h *History) Close() error { return nil }

// Rewind makes the history yield its records from the first again.
func (h *History) Rewind() { h.next = 0 }
