package lifecycle

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/eventtest"
)

// A node report that frees room places what its cluster rejected for lack of it at once, unless the cluster's
// reports woke its blocked workloads less than capacityWakeInterval before; then the next tick places it. A
// cluster flooding its node reports runs the blocked workloads' cycles about once a second, not once a report.
func TestNodeReportsWakeBlockedWorkloadsAtMostOnceAnInterval(t *testing.T) {
	tests := []struct {
		name string
		// gap is the event time between the report that woke the blocked workload last and the one that frees room
		gap time.Duration
		// reports are how many reports, all within the interval, come before the one that frees room
		reports int
		// placedBy is "report" when the Apply follows the freeing report, "tick" when it waits for the tick
		placedBy string
	}{
		{name: "a report after the interval", gap: 1500 * time.Millisecond, placedBy: "report"},
		{name: "a report within the interval", gap: 100 * time.Millisecond, placedBy: "tick"},
		{name: "a flood of reports", gap: time.Millisecond, reports: 500, placedBy: "tick"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHistory().policy("only", "busy").cluster("busy", "8")
			h.workload(eventtest.Deployment("big", "6")).workload(eventtest.Deployment("next", "4"))
			// The same room as before: it wakes next, which still does not fit.
			h.add(schemas.TypeNodeChanged, schemas.NodeSubject("busy", "n1"), eventtest.Node("busy", "n1", "8"))
			setUp := len(h.events)
			h.every(tt.gap / time.Duration(tt.reports+1))
			for range tt.reports {
				h.add(schemas.TypeNodeChanged, schemas.NodeSubject("busy", "n1"), eventtest.Node("busy", "n1", "8"))
			}
			h.add(schemas.TypeNodeChanged, schemas.NodeSubject("busy", "n1"), eventtest.Node("busy", "n1", "16"))
			freed := len(h.events)
			h.every(time.Second).tick()

			c := newController(t)
			if got := actions(t, run(t, c, h.events[:setUp])); !slices.Equal(got, []string{"Apply busy"}) {
				t.Fatalf("decisions before the reports = %v, want big's Apply only", got)
			}
			atReport := actions(t, run(t, c, h.events[setUp:freed]))
			atTick := actions(t, run(t, c, h.events[freed:]))
			want := map[string][2][]string{"report": {{"Apply busy"}, nil}, "tick": {nil, {"Apply busy"}}}[tt.placedBy]
			if !slices.Equal(atReport, want[0]) || !slices.Equal(atTick, want[1]) {
				t.Fatalf("decisions at the reports = %v and at the tick = %v, want %v and %v", atReport, atTick, want[0], want[1])
			}
		})
	}
}

// BenchmarkNodeReports measures one node report of a cluster that 200 blocked workloads wait on, when reports
// come a millisecond apart (a flood: most leave the wake to the tick) and when each comes after the interval
// (each wakes every blocked workload).
func BenchmarkNodeReports(b *testing.B) {
	for _, gap := range []time.Duration{time.Millisecond, capacityWakeInterval + time.Millisecond} {
		b.Run("every "+gap.String(), func(b *testing.B) {
			h := newHistory().policy("only", "busy").cluster("busy", "8")
			h.workload(eventtest.Deployment("big", "8"))
			for i := range 200 {
				h.workload(eventtest.Deployment("blocked-"+strconv.Itoa(i), "1"))
			}
			c := newController(b)
			run(b, c, h.events)
			h.every(gap)
			report := eventtest.Node("busy", "n1", "8")
			b.ResetTimer()
			for range b.N {
				h.add(schemas.TypeNodeChanged, schemas.NodeSubject("busy", "n1"), report)
				if _, err := c.Handle(h.events[len(h.events)-1]); err != nil {
					b.Fatal(err)
				}
				c.Commit()
			}
		})
	}
}
