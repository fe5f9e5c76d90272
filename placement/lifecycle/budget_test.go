package lifecycle

import (
	"testing"
	"time"
)

// TestReportBudget: a cluster's reports are admitted up to the burst, then at the rate, on stream time; a
// refusal is recorded at once and then at most once a minute, with the count since the last record; one
// cluster's budget is not another's.
func TestReportBudget(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	type report struct {
		cluster string
		at      time.Duration // stream time after t0
		want    Refusal
	}
	admitted := Refusal{}
	tests := []struct {
		name    string
		budget  ReportBudget
		reports []report
	}{
		{name: "the zero budget admits all", reports: []report{{"a", 0, admitted}, {"a", 0, admitted}, {"a", 0, admitted}}},
		{name: "a burst within the budget", budget: ReportBudget{Rate: 1, Burst: 3},
			reports: []report{{"a", 0, admitted}, {"a", 0, admitted}, {"a", 0, admitted}}},
		{name: "over the burst, refused and recorded once", budget: ReportBudget{Rate: 1, Burst: 2},
			reports: []report{{"a", 0, admitted}, {"a", 0, admitted}, {"a", 0, Refusal{Refused: true, Record: 1}},
				{"a", 10 * time.Millisecond, Refusal{Refused: true}}, {"a", 20 * time.Millisecond, Refusal{Refused: true}}}},
		{name: "the rate refills on stream time", budget: ReportBudget{Rate: 10, Burst: 1},
			reports: []report{{"a", 0, admitted}, {"a", 50 * time.Millisecond, Refusal{Refused: true, Record: 1}},
				{"a", 100 * time.Millisecond, admitted}, {"a", 150 * time.Millisecond, Refusal{Refused: true}},
				{"a", 200 * time.Millisecond, admitted}}},
		{name: "no more than the burst after a quiet hour", budget: ReportBudget{Rate: 100, Burst: 2},
			reports: []report{{"a", 0, admitted}, {"a", time.Hour, admitted}, {"a", time.Hour, admitted},
				{"a", time.Hour, Refusal{Refused: true, Record: 1}}}},
		{name: "recorded again a minute later with the count", budget: ReportBudget{Rate: 0.001, Burst: 1},
			reports: []report{{"a", 0, admitted}, {"a", time.Second, Refusal{Refused: true, Record: 1}},
				{"a", 2 * time.Second, Refusal{Refused: true}}, {"a", 30 * time.Second, Refusal{Refused: true}},
				{"a", 61 * time.Second, Refusal{Refused: true, Record: 3}}}},
		{name: "a redelivery stored earlier spends without refilling", budget: ReportBudget{Rate: 1, Burst: 1},
			reports: []report{{"a", 10 * time.Second, admitted}, {"a", 0, Refusal{Refused: true, Record: 1}}}},
		{name: "clusters have budgets of their own", budget: ReportBudget{Rate: 1, Burst: 1},
			reports: []report{{"flood", 0, admitted}, {"flood", 0, Refusal{Refused: true, Record: 1}},
				{"quiet", 0, admitted}, {"flood", 0, Refusal{Refused: true}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.budget
			for i, r := range tt.reports {
				if got := b.Take(r.cluster, t0.Add(r.at)); got != r.want {
					t.Errorf("report %d (%s at +%s) = %+v, want %+v", i, r.cluster, r.at, got, r.want)
				}
			}
		})
	}
}

// BenchmarkReportBudget is the cost of one report's check in a flood, refused.
func BenchmarkReportBudget(b *testing.B) {
	budget := ReportBudget{Rate: DefaultNodeReportRate, Burst: DefaultNodeReportBurst}
	at := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i := 0; b.Loop(); i++ {
		budget.Take("flood", at.Add(time.Duration(i)*10*time.Microsecond))
	}
}
