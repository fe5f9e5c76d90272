package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteJSON prints one array entry per workload.
func WriteJSON(w io.Writer, results []Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

// WriteTable prints the results for people: one row per workload, then its reasons, one cluster per line.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tPOLICY\tSTATUS\tCLUSTERS")
	for _, r := range results {
		policy := "-"
		if r.Policy != nil {
			policy = *r.Policy
		}
		clusters := "-"
		if len(r.Clusters) > 0 {
			parts := make([]string, len(r.Clusters))
			for i, c := range r.Clusters {
				parts[i] = c
				if n, ok := r.Replicas[c]; ok {
					parts[i] = fmt.Sprintf("%s(%d)", c, n)
				}
			}
			clusters = strings.Join(parts, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Workload, policy, r.Status, clusters)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if len(r.Reasons) == 0 && r.Message == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s):\n", r.Workload, r.Status)
		if r.Message != "" {
			fmt.Fprintf(w, "  %s\n", r.Message)
		}
		names := make([]string, 0, len(r.Reasons))
		for c := range r.Reasons {
			names = append(names, c)
		}
		slices.Sort(names)
		for _, c := range names {
			fmt.Fprintf(w, "  %s: %s\n", c, r.Reasons[c])
		}
	}
	return nil
}
