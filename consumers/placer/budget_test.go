package placer

import (
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/schemas"
)

// TestNodeReportsRefuse: only node subjects count against their cluster's budget; the defaults take a
// 5,000-node cluster republishing every node four times at once; a negative rate bounds nothing; the dead
// letter's reason names the cluster and the bound.
func TestNodeReportsRefuse(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		config  PlacerConfig
		subject string
		reports int
		// refused and dead count the refusals and the dead letters asked for; reason is in the first dead one's
		refused, dead int
		reason        string
	}{
		{name: "a republished big cluster, four times", subject: schemas.NodeSubject("big", "n1"), reports: 20000},
		{name: "over the default burst", subject: schemas.NodeSubject("big", "n1"), reports: 20010, refused: 10, dead: 1,
			reason: "cluster big sent node reports over its budget of 1000 a second (burst 20000) of stream time: 1 refused"},
		{name: "a small budget", config: PlacerConfig{NodeReportRate: 5, NodeReportBurst: 2},
			subject: schemas.NodeSubject("gpu.east", "n1"), reports: 5, refused: 3, dead: 1,
			reason: "cluster gpu.east sent node reports over its budget of 5 a second (burst 2)"},
		{name: "no bound", config: PlacerConfig{NodeReportRate: -1}, subject: schemas.NodeSubject("big", "n1"), reports: 30000},
		{name: "heartbeats are not node reports", config: PlacerConfig{NodeReportRate: 5, NodeReportBurst: 2},
			subject: schemas.ClusterHeartbeatSubject("east"), reports: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := NewNodeReports(tt.config)
			refused, dead, reason := 0, 0, ""
			for range tt.reports {
				r, d := n.Refuse(tt.subject, at)
				if r != "" {
					refused++
				}
				if d {
					dead++
					if reason == "" {
						reason = r
					}
				}
			}
			if refused != tt.refused || dead != tt.dead || !strings.Contains(reason, tt.reason) {
				t.Errorf("%d reports: %d refused, %d dead letters (%q); want %d, %d (%q)", tt.reports, refused, dead, reason,
					tt.refused, tt.dead, tt.reason)
			}
		})
	}
}
