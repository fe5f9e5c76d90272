package chaos

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// maxListed bounds how many violations the report prints; the count says how many there were.
const maxListed = 30

// Report is what a run did and what it found.
type Report struct {
	Seed      uint64
	Duration  time.Duration
	Workloads []*Workload
	Kills     []Kill
	// Crashes are the parts' exits that the run did not cause; the parts were started again.
	Crashes []string
	// Violations are the promises still broken when the run stopped checking; none when it converged.
	Violations []string
	// Converged is how long after the fleet went quiet (the last fault's target back, the last workload
	// submitted or deleted, whichever came later) every check passed; negative when they never did.
	Converged time.Duration
}

// Failed says whether a promise was broken, or a fault could not be carried out (a target that did not come
// back is a failure of its own).
func (r *Report) Failed() bool {
	return len(r.Violations) > 0 || r.Converged < 0 || slices.ContainsFunc(r.Kills, func(k Kill) bool { return k.Err != "" })
}

// Write prints the report: the run, its faults by kind, and the verdict.
func (r *Report) Write(w io.Writer) error {
	deleted := 0
	for _, wl := range r.Workloads {
		if wl.Deleted {
			deleted++
		}
	}
	byKind := map[string]int{}
	var failedKills []string
	for _, k := range r.Kills {
		byKind[k.Kind]++
		if k.Err != "" {
			failedKills = append(failedKills, fmt.Sprintf("%s at %s: %s", k.Target, k.At.Round(time.Second), k.Err))
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "seed\t%d\n", r.Seed)
	fmt.Fprintf(tw, "duration\t%s\n", r.Duration)
	fmt.Fprintf(tw, "workloads\t%d submitted, %d deleted\n", len(r.Workloads), deleted)
	fmt.Fprintf(tw, "kills\t%d\n", len(r.Kills))
	kinds := make([]string, 0, len(byKind))
	for k := range byKind {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		fmt.Fprintf(tw, "  %s\t%d\n", k, byKind[k])
	}
	fmt.Fprintf(tw, "exits on their own\t%d\n", len(r.Crashes))
	if r.Converged >= 0 {
		fmt.Fprintf(tw, "converged\t%s after the last fault or submission\n", r.Converged.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(tw, "converged\tno\n")
	}
	fmt.Fprintf(tw, "violations\t%d\n", len(r.Violations))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range r.Crashes {
		fmt.Fprintf(w, "exit: %s\n", c)
	}
	for _, k := range failedKills {
		fmt.Fprintf(w, "fault not carried out: %s\n", k)
	}
	for i, v := range r.Violations {
		if i == maxListed {
			fmt.Fprintf(w, "... and %d more\n", len(r.Violations)-maxListed)
			break
		}
		fmt.Fprintf(w, "violation: %s\n", v)
	}
	return nil
}
