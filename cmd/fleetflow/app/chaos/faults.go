package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Target is something a run kills and brings back: a fleetflow part, a NATS node, an apiserver.
type Target struct {
	// Name names it in the report (placer-0, nats-1, apiserver gpu-east).
	Name string
	// Kind groups targets in the report: placer, applier, producer, status, nats, apiserver.
	Kind string
	// Kill ends it with SIGKILL and returns once it is gone.
	Kill func() error
	// Restart starts it again and returns once it serves (a NATS node has caught up, an apiserver is ready).
	Restart func() error
}

// Kill is one fault of a run, times since the run started.
type Kill struct {
	Target string
	Kind   string
	At     time.Duration
	// Down is how long the target stayed down, until it served again.
	Down time.Duration
	// Err is why the kill or the restart failed; the report names it.
	Err string
}

// FaultOptions are how often, and for how long, targets go down.
type FaultOptions struct {
	// Gap bounds the random wait between one target coming back and the next kill: uniform in [Gap/4, Gap].
	Gap time.Duration
	// MaxDown bounds how long a killed target stays down before its restart: uniform in [MaxDown/10, MaxDown].
	MaxDown time.Duration
}

// faults kills one target at a time: the next goes down only once the last one serves again, so the fleet
// never loses two NATS nodes (the streams' quorum) at once.
type faults struct {
	opts    FaultOptions
	targets []Target
	rand    *rand.Rand
	start   time.Time
	log     *slog.Logger
}

// run kills targets until ctx ends, and returns what it did. Every target is up when it returns.
func (f *faults) run(ctx context.Context) []Kill {
	var kills []Kill
	for {
		if !sleep(ctx, uniform(f.rand, f.opts.Gap/4, f.opts.Gap)) {
			return kills
		}
		t := f.targets[f.rand.IntN(len(f.targets))]
		down := uniform(f.rand, f.opts.MaxDown/10, f.opts.MaxDown)
		k := Kill{Target: t.Name, Kind: t.Kind, At: time.Since(f.start)}
		f.log.Info("chaos: kill", "target", t.Name, "down", down)
		if err := t.Kill(); err != nil {
			k.Err = fmt.Sprintf("kill: %v", err)
		}
		// The restart happens even when the run ends meanwhile: nothing is left down.
		sleep(ctx, down)
		if err := t.Restart(); err != nil {
			k.Err = fmt.Sprintf("restart: %v", err)
			f.log.Error("chaos: restart failed", "target", t.Name, "error", err)
		}
		k.Down = time.Since(f.start) - k.At
		f.log.Info("chaos: back", "target", t.Name, "after", k.Down)
		kills = append(kills, k)
	}
}

// uniform draws a duration in [low, high].
func uniform(r *rand.Rand, low, high time.Duration) time.Duration {
	if high <= low {
		return low
	}
	return low + time.Duration(r.Int64N(int64(high-low)+1))
}

// sleep waits d, or less when ctx ends first, and says whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
