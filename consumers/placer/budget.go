package placer

import (
	"fmt"
	"time"

	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
	"github.com/fleetflow/fleetflow/schemas"
)

// NodeReports bounds each cluster's node reports where they reach the placer, before they are decoded: a
// cluster may send NodeReportRate a second on average and NodeReportBurst at once, counted on the time the
// events stream stored them (lifecycle.ReportBudget). Its Refuse is the placer consumer's bus.ConsumeLoop.Refuse.
type NodeReports struct {
	budget lifecycle.ReportBudget
}

// NewNodeReports is the bound config sets: its defaults, lifecycle.DefaultNodeReportRate and
// lifecycle.DefaultNodeReportBurst, where unset, and none with a negative rate.
func NewNodeReports(config PlacerConfig) *NodeReports {
	rate, burst := config.NodeReportRate, config.NodeReportBurst
	if rate < 0 {
		return &NodeReports{}
	}
	if rate == 0 {
		rate = lifecycle.DefaultNodeReportRate
	}
	if burst <= 0 {
		burst = lifecycle.DefaultNodeReportBurst
	}
	return &NodeReports{budget: lifecycle.ReportBudget{Rate: rate, Burst: burst}}
}

// Refuse refuses a report on a node subject (a node changed or deleted) over its cluster's budget, counts it
// in fleetflow_node_reports_refused_total, and asks for a dead letter at most once a minute of stream time per
// cluster, naming the cluster, the bound and how many it stands for. It must be called in stream order, from
// one goroutine.
func (n *NodeReports) Refuse(subject string, stored time.Time) (reason string, dead bool) {
	cluster, ok := schemas.ClusterOfNodeSubject(subject)
	if !ok {
		return "", false
	}
	r := n.budget.Take(cluster, stored)
	if !r.Refused {
		return "", false
	}
	observe.NodeReportsRefused.WithLabelValues(cluster).Inc()
	if r.Record == 0 {
		return "node reports over their cluster's budget", false
	}
	return fmt.Sprintf("cluster %s sent node reports over its budget of %g a second (burst %g) of stream time: "+
		"%d refused unread since the last such dead letter, this one included, each node keeping its last state taken",
		cluster, n.budget.Rate, n.budget.Burst, r.Record), true
}
