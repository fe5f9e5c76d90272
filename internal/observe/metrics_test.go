package observe

import (
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsFollowPrometheusConventions: every fleetflow metric passes Prometheus's own linter (snake_case
// names, _total on counters, base units, help text), and every label name of every metric is snake_case, one
// casing for all.
func TestMetricsFollowPrometheusConventions(t *testing.T) {
	// A vector shows in a scrape only once it has a child.
	EventsHandled.WithLabelValues("c", "t", "ok")
	EventHandleSeconds.WithLabelValues("c")
	EventsPublished.WithLabelValues("t")
	PublishErrors.WithLabelValues("t")
	DeadLetters.WithLabelValues("c", "panic")
	DeadLetterErrors.WithLabelValues("c")
	NodeReportsRefused.WithLabelValues("east")
	ApplierOperations.WithLabelValues("east", "Apply", "ok")
	PinnedPods.WithLabelValues("east", "pinned")
	PlacedToAppliedSeconds.WithLabelValues("east", "Apply")
	KubeEvents.WithLabelValues("Scheduled", "recorded")
	WorkqueueMetrics.NewDepthMetric("q")
	WorkqueueMetrics.NewAddsMetric("q")
	WorkqueueMetrics.NewLatencyMetric("q")
	WorkqueueMetrics.NewWorkDurationMetric("q")
	WorkqueueMetrics.NewUnfinishedWorkSecondsMetric("q")
	WorkqueueMetrics.NewLongestRunningProcessorSecondsMetric("q")
	WorkqueueMetrics.NewRetriesMetric("q")
	SetFleetSource(func() FleetStats {
		return FleetStats{UnplacedByReason: map[string]int{"Capacity": 1}, ClusterReady: map[string]bool{"east": true},
			Capacity: []ClusterResource{{Cluster: "east", Resource: "cpu", Allocatable: 1}}}
	})
	defer SetFleetSource(nil)

	families, err := Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	linted := map[string]bool{}
	for _, mf := range families {
		linted[mf.GetName()] = true
	}
	for _, p := range problems {
		if ours(p.Metric) {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}

	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	labels := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for _, c := range registered() {
		for _, d := range descriptions(c) {
			m := labels.FindStringSubmatch(d.String())
			if m == nil || !ours(m[1]) {
				continue
			}
			// The consumer lag gauges show only for a consumer of a running server (e2e/processes_test.go reads one).
			if !linted[m[1]] && !strings.HasPrefix(m[1], "fleetflow_consumer_") {
				t.Errorf("%s was not linted: give its vector a child above", m[1])
			}
			if m[2] == "" {
				continue
			}
			for _, label := range strings.Split(m[2], ",") {
				if !snake.MatchString(label) {
					t.Errorf("%s: label %q is not snake_case", m[1], label)
				}
			}
		}
	}
}

// ours reports whether a metric is fleetflow's rather than Go's or the process's.
func ours(name string) bool {
	return strings.HasPrefix(name, "fleetflow_") || strings.HasPrefix(name, "workqueue_")
}

// TestNamesListEveryFamilyAndHistogramSeries: Names holds the families of fleetflow's collectors, the series a
// histogram adds, and Go's and the process's.
func TestNamesListEveryFamilyAndHistogramSeries(t *testing.T) {
	names := map[string]bool{}
	for _, n := range Names() {
		names[n] = true
	}
	for _, want := range []string{"fleetflow_placer_leader", "fleetflow_cluster_free", "fleetflow_submit_to_placed_seconds_bucket",
		"fleetflow_placed_to_applied_seconds_count", "workqueue_depth", "go_goroutines", "process_cpu_seconds_total"} {
		if !names[want] {
			t.Errorf("Names lacks %s", want)
		}
	}
	if names["fleetflow_placer_leader_bucket"] {
		t.Error("Names has fleetflow_placer_leader_bucket, but a gauge has no buckets")
	}
}
