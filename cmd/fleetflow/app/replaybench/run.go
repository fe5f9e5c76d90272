package replaybench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/placementbench"
	"github.com/fleetflow/fleetflow/schemas"
)

// Result is what a run measured.
type Result struct {
	Clusters  int `json:"clusters"`
	Nodes     int `json:"nodes"`
	Workloads int `json:"workloads"`
	Lifetime  int `json:"lifetime"`
	// Mix is what the synthesized history holds; Records counts its messages in both streams.
	Mix     *Mix `json:"mix"`
	Records int  `json:"records"`
	// Events counts the input events the replay fed its placer; EventsPerSecond divides them by the replay's
	// wall time, EventsPerCPUSecond by the process's CPU time over it.
	Events             int     `json:"events"`
	EventsPerSecond    float64 `json:"eventsPerSecond"`
	EventsPerCPUSecond float64 `json:"eventsPerCPUSecond"`
	// Recorded counts the recorded verdicts and decisions compared; Reproduced, those the replay made alike.
	Recorded    int                 `json:"recorded"`
	Reproduced  int                 `json:"reproduced"`
	Divergences int                 `json:"divergences"`
	First       []replay.Divergence `json:"firstDivergences,omitempty"`
	Notes       []string            `json:"notes,omitempty"`
	// Placed and Unschedulable count the workloads alive at the end by their last verdict in the replay.
	Placed        int `json:"placed"`
	Unschedulable int `json:"unschedulable"`
	// SynthesisSeconds is the time the history took to record (a live placer deciding every input), not timed
	// with the replay.
	SynthesisSeconds float64 `json:"synthesisSeconds"`
	Seconds          float64 `json:"seconds"`
	CPUSeconds       float64 `json:"cpuSeconds"`
	// MaxRSSBytes is the process's peak resident set, synthesis included: the history, both placers' fleet views.
	MaxRSSBytes int64 `json:"maxRSSBytes"`
}

// shownDivergences bounds the divergences a result lists.
const shownDivergences = 10

// Run records a synthetic history of cfg's size with a live placer, then replays it through the placement
// lifecycle and times the replay.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	h, mix, err := Synthesize(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res := &Result{Clusters: cfg.Clusters, Nodes: cfg.Clusters * cfg.NodesPerCluster, Workloads: cfg.Workloads, Lifetime: cfg.Lifetime,
		Mix: mix, Records: len(h.Records), SynthesisSeconds: time.Since(start).Seconds()}
	// The live placer is garbage now; collect it so the replay does not pay for it.
	runtime.GC()

	var profile *os.File
	if cfg.CPUProfile != "" {
		if profile, err = os.Create(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(profile); err != nil {
			_ = profile.Close()
			return nil, fmt.Errorf("CPU profile %s: %w", cfg.CPUProfile, err)
		}
	}
	session := replay.NewSession(replay.Options{})
	startWall, startCPU := time.Now(), placementbench.CPUTime()
	rr, err := session.Run(ctx, h)
	res.Seconds = time.Since(startWall).Seconds()
	res.CPUSeconds = (placementbench.CPUTime() - startCPU).Seconds()
	if profile != nil {
		pprof.StopCPUProfile()
		if closeErr := profile.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("CPU profile %s: %w", cfg.CPUProfile, closeErr)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	res.Events, res.Recorded, res.Reproduced, res.Divergences, res.Notes = rr.Events, rr.Recorded, rr.Reproduced, len(rr.Divergences), rr.Notes
	res.First = rr.Divergences[:min(len(rr.Divergences), shownDivergences)]
	if res.Seconds > 0 {
		res.EventsPerSecond = float64(res.Events) / res.Seconds
	}
	if res.CPUSeconds > 0 {
		res.EventsPerCPUSecond = float64(res.Events) / res.CPUSeconds
	}
	for _, o := range session.Outcomes() {
		switch o.Status {
		case schemas.VerdictPlaced:
			res.Placed++
		case schemas.VerdictUnschedulable:
			res.Unschedulable++
		}
	}
	res.MaxRSSBytes = maxRSS()
	return res, nil
}

// maxRSS is the process's peak resident set size in bytes (Linux reports kilobytes).
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
