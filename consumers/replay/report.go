package replay

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fleetflow/fleetflow/schemas"
)

// WriteTable writes the result for a person: one line of totals, then a line per divergence.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "replayed %d events (sequences %d to %d of %s): %d of %d recorded verdicts and decisions reproduced, "+
		"%d divergences\n", r.Events, r.First, r.Last, schemas.StreamEvents, r.Reproduced, r.Recorded, len(r.Divergences))
	if r.Settings != nil {
		fmt.Fprintf(tw, "placer settings: %s\n", settingsString(r.Settings))
	}
	if r.Undecodable > 0 {
		fmt.Fprintf(tw, "%d messages were no fleetflow event; the placer passed over them too\n", r.Undecodable)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(tw, "note: %s\n", n)
	}
	if len(r.Divergences) > 0 {
		fmt.Fprintln(tw, "\nKIND\tCAUSE\tWORKLOAD\tRECORDED\tREPLAYED\tFIELDS\tID")
		for _, d := range r.Divergences {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", d.Kind, d.Cause, d.Workload, dash(d.Recorded), dash(d.Replayed),
				dash(strings.Join(d.Fields, ",")), d.ID)
		}
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WriteTable writes the what-if for a person: the workloads that change (all of them with all), a summary,
// and the requested share of each cluster's resources before and after.
func (r *WhatIfReport) WriteTable(w io.Writer, all bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	shown := 0
	for _, c := range r.Workloads {
		if c.Change == Same && !all {
			continue
		}
		if shown == 0 {
			fmt.Fprintln(tw, "WORKLOAD\tCHANGE\tRECORDED\tWHAT-IF")
		}
		shown++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Workload, c.Change, outcomeText(c.Recorded), outcomeText(c.WhatIf))
		if c.WhatIf.Status != schemas.VerdictPlaced && c.Change != Same {
			for _, cluster := range slices.Sorted(maps.Keys(c.WhatIf.Reasons)) {
				fmt.Fprintf(tw, "\t\t\t  %s: %s\n", cluster, oneLine(c.WhatIf.Reasons[cluster]))
			}
		}
	}
	s := r.Summary
	if shown > 0 {
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "%d workloads: %d move, %d lose their placement, %d gain one, %d otherwise differ, %d stay as recorded\n",
		s.Workloads, s.Move, s.LosePlacement, s.GainPlacement, s.OtherwiseDiffer,
		s.Workloads-s.Move-s.LosePlacement-s.GainPlacement-s.OtherwiseDiffer)
	if n := len(r.Replay.Divergences); n > 0 {
		fmt.Fprintf(tw, "warning: the history itself replays with %d divergences (run replay without --policy to list them); "+
			"the recorded column shows what was recorded\n", n)
	}
	if len(r.Clusters) > 0 {
		fmt.Fprintln(tw, "\nCLUSTER\tRESOURCE\tALLOCATABLE\tREQUESTED BEFORE\tAFTER")
		for _, c := range r.Clusters {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f%%\t%.1f%%\n", c.Cluster, c.Resource, c.Allocatable, c.Before, c.After)
		}
	}
	return tw.Flush()
}

func outcomeText(o Outcome) string {
	if o.Status == "" {
		return "-"
	}
	return schemas.VerdictOutcome(o.Status, o.Clusters)
}

// oneLine folds a reason onto one line, bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
