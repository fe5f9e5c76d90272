package chaos

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// recorder is a set of fake targets that records what happens to them, and ends the run after stopAfter kills.
type recorder struct {
	mu        sync.Mutex
	events    []string
	down      map[string]bool
	stopAfter int
	cancel    context.CancelFunc
	failKill  string
}

func (r *recorder) targets(n int) []Target {
	var out []Target
	for i := range n {
		name := "t" + strconv.Itoa(i)
		out = append(out, Target{Name: name, Kind: "part",
			Kill: func() error {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.events = append(r.events, "kill "+name)
				r.down[name] = true
				if len(r.events)/2+1 >= r.stopAfter {
					r.cancel()
				}
				if name == r.failKill {
					return errors.New("no such process")
				}
				return nil
			},
			Restart: func() error {
				r.mu.Lock()
				defer r.mu.Unlock()
				r.events = append(r.events, "restart "+name)
				r.down[name] = false
				return nil
			}})
	}
	return out
}

func runFaults(t *testing.T, seed uint64, stopAfter int, failKill string) ([]Kill, *recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rec := &recorder{down: map[string]bool{}, stopAfter: stopAfter, cancel: cancel, failKill: failKill}
	f := &faults{opts: FaultOptions{Gap: time.Millisecond, MaxDown: time.Millisecond}, targets: rec.targets(5),
		rand: rand.New(rand.NewPCG(seed, 1)), start: time.Now(), log: slog.New(slog.DiscardHandler)}
	return f.run(ctx), rec
}

func TestFaultsKillOneTargetAtATimeAndBringEachBack(t *testing.T) {
	kills, rec := runFaults(t, 7, 20, "")
	if len(kills) != 20 {
		t.Fatalf("%d kills, want the 20 before the run ended", len(kills))
	}
	for i, k := range kills {
		if rec.events[2*i] != "kill "+k.Target || rec.events[2*i+1] != "restart "+k.Target {
			t.Fatalf("fault %d: events %q, want a kill of %s then its restart, before anything else", i,
				rec.events[2*i:2*i+2], k.Target)
		}
	}
	for name, down := range rec.down {
		if down {
			t.Errorf("%s left down", name)
		}
	}
}

func TestFaultsFollowTheSeed(t *testing.T) {
	targetsOf := func(kills []Kill) []string {
		var out []string
		for _, k := range kills {
			out = append(out, k.Target)
		}
		return out
	}
	a, _ := runFaults(t, 7, 15, "")
	b, _ := runFaults(t, 7, 15, "")
	c, _ := runFaults(t, 8, 15, "")
	if !slices.Equal(targetsOf(a), targetsOf(b)) {
		t.Errorf("seed 7 killed %v, then %v", targetsOf(a), targetsOf(b))
	}
	if slices.Equal(targetsOf(a), targetsOf(c)) {
		t.Errorf("seeds 7 and 8 both killed %v", targetsOf(a))
	}
}

func TestAFaultNotCarriedOutFailsTheRun(t *testing.T) {
	kills, _ := runFaults(t, 7, 30, "t3")
	r := &Report{Kills: kills}
	if !slices.ContainsFunc(kills, func(k Kill) bool { return k.Target == "t3" }) {
		t.Fatalf("seed 7 never picked t3 in %d kills", len(kills))
	}
	if !r.Failed() {
		t.Error("a run whose kill of t3 failed did not fail")
	}
}
