package observe

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthEndpointsListEveryCheck: /healthz runs the liveness checks, /readyz those and the readiness ones,
// each answer naming every check and 503 once one fails; a removed check is no longer run. /metrics serves
// fleetflow's metrics.
func TestHealthEndpointsListEveryCheck(t *testing.T) {
	addr, err := Serve(t.Context(), "127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	var connected, rebuilt error
	removeLive := AddLiveness("conn", func() error { return connected })
	defer removeLive()
	removeReady := AddReadiness("view", func() error { return rebuilt })
	tests := []struct {
		name             string
		connected, ready error
		path             string
		wantCode         int
		wantLines        []string
	}{
		{"alive", nil, nil, "/healthz", 200, []string{"[+]conn ok", "healthz check passed"}},
		{"ready", nil, nil, "/readyz", 200, []string{"[+]conn ok", "[+]view ok", "readyz check passed"}},
		{"not ready yet", nil, errors.New("rebuilding"), "/readyz", 503, []string{"[+]conn ok", "[-]view failed: rebuilding", "readyz check failed"}},
		{"alive while not ready", nil, errors.New("rebuilding"), "/livez", 200, []string{"[+]conn ok"}},
		{"dead", errors.New("closed for good"), nil, "/healthz", 503, []string{"[-]conn failed: closed for good"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			connected, rebuilt = tt.connected, tt.ready
			code, body := get(tt.path)
			if code != tt.wantCode {
				t.Errorf("%s answered %d, want %d:\n%s", tt.path, code, tt.wantCode, body)
			}
			for _, line := range tt.wantLines {
				if !strings.Contains(body, line+"\n") {
					t.Errorf("%s answered\n%s\nwant the line %q", tt.path, body, line)
				}
			}
			if tt.path != "/readyz" && strings.Contains(body, "view") {
				t.Errorf("%s ran a readiness check:\n%s", tt.path, body)
			}
		})
	}
	removeReady()
	connected, rebuilt = nil, errors.New("rebuilding")
	if code, body := get("/readyz"); code != 200 || strings.Contains(body, "view") {
		t.Errorf("/readyz after the check was removed answered %d:\n%s", code, body)
	}
	Verdicts.WithLabelValues("Placed").Inc()
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `fleetflow_placer_verdicts_total{status="Placed"}`) ||
		!strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics answered %d without fleetflow's and Go's metrics:\n%.2000s", code, body)
	}
}

// TestFleetGaugesAreCountedAtEachScrape: without a leading placer the fleet gauges read 0; with one, each scrape
// reads its current counts, and they go back to 0 once it stops leading.
func TestFleetGaugesAreCountedAtEachScrape(t *testing.T) {
	scrape := func() string {
		t.Helper()
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	wantLines := func(body string, lines ...string) {
		t.Helper()
		for _, line := range lines {
			if !strings.Contains(body, line+"\n") {
				t.Errorf("/metrics lacks %q:\n%.3000s", line, body)
			}
		}
	}
	wantLines(scrape(), `fleetflow_placer_workloads{placed="true"} 0`, `fleetflow_placer_clusters{ready="false"} 0`)
	stats := FleetStats{Placed: 7, Unplaced: 2, Ready: 3, NotReady: 1, UnplacedByReason: map[string]int{"Capacity": 2, "Taint": 1},
		ClusterReady: map[string]bool{"east": true, "west": false},
		Capacity:     []ClusterResource{{Cluster: "east", Resource: "cpu", Allocatable: 8, Free: 6.5}}}
	SetFleetSource(func() FleetStats { return stats })
	wantLines(scrape(), `fleetflow_placer_workloads{placed="true"} 7`, `fleetflow_placer_workloads{placed="false"} 2`,
		`fleetflow_placer_clusters{ready="true"} 3`, `fleetflow_placer_clusters{ready="false"} 1`,
		`fleetflow_placer_unplaced_workloads{reason="Capacity"} 2`, `fleetflow_placer_unplaced_workloads{reason="Taint"} 1`,
		`fleetflow_cluster_allocatable{cluster="east",resource="cpu"} 8`, `fleetflow_cluster_free{cluster="east",resource="cpu"} 6.5`,
		`fleetflow_cluster_ready{cluster="east"} 1`, `fleetflow_cluster_ready{cluster="west"} 0`)
	stats.Placed = 8
	wantLines(scrape(), `fleetflow_placer_workloads{placed="true"} 8`)
	SetFleetSource(nil)
	wantLines(scrape(), `fleetflow_placer_workloads{placed="true"} 0`, `fleetflow_placer_clusters{ready="true"} 0`)
}
