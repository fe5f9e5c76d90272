package placementbench

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// Result is what a run measured.
type Result struct {
	Clusters  int `json:"clusters"`
	Nodes     int `json:"nodes"`
	Workloads int `json:"workloads"`
	// DecisionsPerSecond counts, per second of wall time, workloads taken from arrival in the fleet view to a
	// decision applied to it (upsert, match, filter, fit, score, reserve).
	DecisionsPerSecond float64 `json:"decisionsPerSecond"`
	// BytesPerNode is the live heap of the loaded fleet view (nodes, capacity rows, indexes) divided by its nodes.
	BytesPerNode float64 `json:"bytesPerNode"`
	// BytesPerNodeAfterRun also counts the workloads, reservations and placements of the run.
	BytesPerNodeAfterRun float64 `json:"bytesPerNodeAfterRun"`
	Placed               int     `json:"placed"`
	Unschedulable        int     `json:"unschedulable"`
	NoPolicy             int     `json:"noPolicy"`
	Seconds              float64 `json:"seconds"`
	// CPUSeconds is the process's user+system CPU time over the same span; DecisionsPerCPUSecond divides by it,
	// which is the figure that holds on a machine shared with other work.
	CPUSeconds            float64 `json:"cpuSeconds"`
	DecisionsPerCPUSecond float64 `json:"decisionsPerCPUSecond"`
}

// CPUTime is the process's user plus system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// bytesPerNode divides the heap's growth from before to after among nodes. A small fleet can grow the heap
// less than the garbage collected meanwhile shrinks it: that counts as 0, not as an unsigned wrap-around
// (9.2e17 bytes per node).
func bytesPerNode(before, after uint64, nodes int) float64 {
	if after <= before || nodes <= 0 {
		return 0
	}
	return float64(after-before) / float64(nodes)
}

// Run builds the fleet, then places cfg.Workloads workloads one after another, each decision's reservations
// counting against the next.
func Run(cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	analyses, err := cfg.analyses()
	if err != nil {
		return nil, err
	}
	before := liveHeap()
	fleet, err := BuildFleet(cfg)
	if err != nil {
		return nil, err
	}
	nodes := cfg.Clusters * cfg.NodesPerCluster
	res := &Result{Clusters: cfg.Clusters, Nodes: nodes, Workloads: cfg.Workloads}
	res.BytesPerNode = bytesPerNode(before, liveHeap(), nodes)

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
	start, startCPU := time.Now(), CPUTime()
	err = fleet.Place(analyses, res)
	if profile != nil {
		pprof.StopCPUProfile()
		if closeErr := profile.Close(); closeErr != nil && err == nil {
			err = fmt.Errorf("CPU profile %s: %w", cfg.CPUProfile, closeErr)
		}
	}
	if err != nil {
		return nil, err
	}
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = (CPUTime() - startCPU).Seconds()
	if res.CPUSeconds > 0 {
		res.DecisionsPerCPUSecond = float64(cfg.Workloads) / res.CPUSeconds
	}
	if res.Seconds > 0 {
		res.DecisionsPerSecond = float64(cfg.Workloads) / res.Seconds
	}
	res.BytesPerNodeAfterRun = bytesPerNode(before, liveHeap(), nodes)
	runtime.KeepAlive(fleet)
	return res, nil
}

// Place adds each workload to the fleet view and runs its placement cycle, tallying the outcomes in res.
func (f *Fleet) Place(analyses []*karta.Analysis, res *Result) error {
	sched := f.Scheduler
	for _, a := range analyses {
		wl, err := f.Store.UpsertWorkload(f.NextSeq(), structs.WorkloadInfo{Analysis: a, Generation: 1})
		if err != nil {
			return err
		}
		plan, _, err := sched.Process(f.Store.Snapshot(), f.Planner, wl.ID)
		if err != nil {
			return fmt.Errorf("place %s: %w", wl.DisplayName(), err)
		}
		switch plan.Decisions[0].Status {
		case structs.StatusPlaced:
			res.Placed++
		case structs.StatusUnschedulable:
			res.Unschedulable++
		case structs.StatusNoPolicy:
			res.NoPolicy++
		}
	}
	return nil
}
