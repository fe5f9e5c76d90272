package app

import (
	"log/slog"
	"os"
	"runtime/debug"
)

// PlacerGCPercent is the garbage collector target (GOGC) of a process that runs the placer. Most of the
// placer's heap is its fleet view, which lives as long as the process, and every collection marks all of
// it, while what one decision allocates dies at once. With Go's default of 100, a 100,000-node fleet is
// collected every few hundred workloads and the collector takes one of two cores for hundreds of
// milliseconds each time; at 300 it collects a third as often, for up to twice as much heap. Bound the
// heap with GOMEMLIMIT where memory is tight: the collector then works harder only near the limit.
const PlacerGCPercent = 300

// TuneGCForPlacer sets the process's GC target to percent, unless GOGC is set in the environment, which
// wins. percent 0 keeps Go's default. It returns the target in effect, -1 meaning the environment's.
func TuneGCForPlacer(percent int, log *slog.Logger) int {
	if env := os.Getenv("GOGC"); env != "" {
		log.Debug("GC target from the environment", "GOGC", env)
		return -1
	}
	if percent <= 0 {
		return 100
	}
	debug.SetGCPercent(percent)
	log.Debug("GC target for the placer", "gc_percent", percent)
	return percent
}
