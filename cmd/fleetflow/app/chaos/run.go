package chaos

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Options are one run: its seed, how long faults and load go on, what they are, and how long the fleet has
// to converge after the last fault.
type Options struct {
	// Seed draws the workloads, the targets and the delays: two runs with one seed make the same choices
	// (their timing, and so what each fault interrupts, differs).
	Seed     uint64
	Duration time.Duration
	Load     LoadOptions
	Faults   FaultOptions
	// Converge bounds the wait, after the last fault, for every check to pass.
	Converge time.Duration
}

// Run submits and deletes workloads while killing targets for Duration, then checks the fleet until every
// promise holds or Converge runs out. Parts are the processes among targets, whose own exits the report
// lists. The error is for a run that could not be carried out; broken promises are in the Report.
func Run(ctx context.Context, opts Options, fleet Fleet, targets []Target, parts []*Process, log *slog.Logger) (*Report, error) {
	start := time.Now()
	r := &Report{Seed: opts.Seed, Duration: opts.Duration}
	faultCtx, stopFaults := context.WithTimeout(ctx, opts.Duration)
	defer stopFaults()
	f := &faults{opts: opts.Faults, targets: targets, rand: rand.New(rand.NewPCG(opts.Seed, 1)), start: start, log: log}
	var wg sync.WaitGroup
	wg.Go(func() { r.Kills = f.run(faultCtx) })
	// The load ends a little before the faults, so the last faults land on a fleet still busy with it.
	l := &load{opts: opts.Load, client: fleet.ControlPlane, rand: rand.New(rand.NewPCG(opts.Seed, 2)), log: log}
	workloads, err := l.run(ctx, opts.Duration*9/10)
	stopFaults()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	r.Workloads = workloads
	defer func() {
		for _, p := range parts {
			r.Crashes = append(r.Crashes, p.Crashes()...)
		}
	}()

	// The fleet is quiet from the last restart or the last submission, whichever came later.
	quiet := l.last
	if n := len(r.Kills); n > 0 {
		if back := start.Add(r.Kills[n-1].At + r.Kills[n-1].Down); back.After(quiet) {
			quiet = back
		}
	}
	deadline := time.Now().Add(opts.Converge)
	for {
		violations, err := check(ctx, fleet, workloads)
		switch {
		case err != nil:
			log.Info("chaos: checking", "error", err)
			r.Violations = []string{"could not check: " + err.Error()}
		case len(violations) == 0:
			r.Violations = nil
			r.Converged = time.Since(quiet)
			return r, nil
		default:
			r.Violations = violations
		}
		if time.Now().After(deadline) || !sleep(ctx, time.Second) {
			r.Converged = -1
			return r, ctx.Err()
		}
	}
}
