package explain

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteTable renders the explanation for people: one line per fact, each starting with what it is about (a
// section, a policy, a cluster and its check) and saying PASS or FAIL in words, so it reads top to bottom and
// greps well ("grep 'gpu-b.*FAIL'").
func (e *Explanation) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")) }

	line("workload", e.Workload, fmt.Sprintf("generation %d, id %s, view at sequence %d", e.Generation, e.ID, e.ViewIndex))
	a := e.Analysis
	line("analysis", "ri "+a.ResourceInterface, fmt.Sprintf("%s %s, %d pods", a.APIVersion, a.Kind, a.TotalPods))
	for _, c := range a.Components {
		pods := strconv.FormatInt(c.Pods, 10) + " pods"
		if c.MinReplicas != nil {
			pods += fmt.Sprintf(" (min %d)", *c.MinReplicas)
		}
		line("component", c.Name, pods+", per pod: "+c.RequestsPerPod.String())
	}
	for _, g := range a.Gangs {
		line("gang", g.Name, strings.Join(g.Members, ", "))
	}
	for _, p := range e.Policies {
		line("policy", p.Name, p.Result, fmt.Sprintf("priority %d: %s", p.Priority, p.Reason))
	}
	if e.Policy == "" {
		line("governing", "(none)", "FAIL", "no SchedulePolicy selects this workload")
	} else {
		how := "mode " + e.Mode
		if e.CapacityAware {
			how += ", capacity-aware, scoring " + e.Scoring
			if e.Dominant != "" {
				how += " on " + e.Dominant
			}
		} else {
			how += ", not capacity-aware"
		}
		line("governing", e.Policy, "USED", how)
	}
	passing := 0
	for _, c := range e.Clusters {
		if c.Result == "PASS" {
			passing++
		}
	}
	for _, c := range e.Clusters {
		line("cluster", c.Name, c.Result, clusterSummary(c, passing))
		for _, ch := range c.Checks {
			line("  "+c.Name, ch.Name, ch.Result, ch.Detail)
		}
		if c.PodNeeds != nil {
			needs := "one pod of " + c.PodComponent + " needs " + c.PodNeeds.String()
			if n := c.LargestFreeNode; n != nil {
				line("  "+c.Name, "LargestFreeNode", "INFO", n.Node+" has "+n.Free.String()+" free; "+needs)
			} else {
				line("  "+c.Name, "LargestFreeNode", "INFO", "no node allows the pod; "+needs)
			}
		}
	}
	d := e.Decision
	line("decision", d.Status, decisionText(d))
	if p := e.Placement; p != nil {
		when := fmt.Sprintf("sequence %d", p.DecidedIndex)
		if p.DecidedAt != "" {
			when += " at " + p.DecidedAt
		}
		line("placement", strings.Join(p.Clusters, ","), fmt.Sprintf("policy %s, generation %d, decision %s, %s",
			p.Policy, p.Generation, p.DecisionID, when))
	} else {
		kept := "placed nowhere"
		if len(e.Kept) > 0 {
			kept += "; its copies still run on " + strings.Join(e.Kept, ",")
		}
		line("placement", "(none)", kept)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("explain: write table: %w", err)
	}
	return nil
}

func clusterSummary(c Cluster, passing int) string {
	if c.Result != "PASS" {
		return c.Code + ": " + c.Reason
	}
	var parts []string
	if c.Rank > 0 {
		parts = append(parts, rankText(c.Rank, passing))
	}
	if c.Score != nil {
		parts = append(parts, "score "+strconv.FormatInt(*c.Score, 10))
	}
	if c.Selected {
		parts = append(parts, "selected")
	}
	if c.Note != "" {
		parts = append(parts, c.Note)
	}
	return strings.Join(parts, ", ")
}

func decisionText(d Decision) string {
	var parts []string
	if len(d.Clusters) > 0 {
		parts = append(parts, "on "+strings.Join(d.Clusters, ","))
	}
	for _, cluster := range sortedKeys(d.Replicas) {
		parts = append(parts, fmt.Sprintf("%s: %d replicas", cluster, d.Replicas[cluster]))
	}
	if d.Message != "" {
		parts = append(parts, d.Message)
	}
	return strings.Join(parts, "; ")
}
