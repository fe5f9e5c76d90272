package chart

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/fleetflow/fleetflow/internal/observe"
)

var promql = parser.NewParser(parser.Options{})

// TestAlertsParseAndNameExportedMetrics: the rule file is valid as Prometheus loads it (expressions, durations,
// templates), every alert has a severity and a summary, and every metric an expression reads is one fleetflow
// exports.
func TestAlertsParseAndNameExportedMetrics(t *testing.T) {
	content, err := os.ReadFile(filepath.Join("fleetflow", "files", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	groups, errs := rulefmt.Parse(content, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("prometheus-rules.yaml: %v", err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatal("prometheus-rules.yaml holds no rule group")
	}
	alerts := 0
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts++
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s: want a severity label and a summary annotation", r.Alert)
			}
			checkMetrics(t, "alert "+r.Alert, r.Expr)
		}
	}
	if alerts < 5 {
		t.Errorf("%d alerts, want at least the cluster, leader, latency, backlog and lag ones", alerts)
	}
}

// TestDashboardQueriesParseAndNameExportedMetrics: the Grafana dashboard is JSON with a uid and a data source
// variable, and every panel's query parses (Grafana's variables stood in for) and reads metrics fleetflow exports.
func TestDashboardQueriesParseAndNameExportedMetrics(t *testing.T) {
	content, err := os.ReadFile(filepath.Join("fleetflow", "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(content, &dashboard); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	if dashboard.UID == "" || !slices.ContainsFunc(dashboard.Templating.List, func(v struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}) bool {
		return v.Type == "datasource"
	}) {
		t.Error("the dashboard needs a uid and a data source variable, to be imported into any Grafana")
	}
	queries := 0
	for _, p := range dashboard.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			queries++
			checkMetrics(t, "panel "+p.Title, grafanaVariable.ReplaceAllStringFunc(target.Expr, standIn))
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no query")
	}
}

// grafanaVariable matches the variables Grafana fills in before it runs a query.
var grafanaVariable = regexp.MustCompile(`\$__rate_interval|\$__interval|\$\{?[a-z_]+\}?`)

// standIn is what a Grafana variable is replaced by for the query to parse: a duration in a range, a label
// value in a string.
func standIn(variable string) string {
	if strings.HasPrefix(variable, "$__") {
		return "5m"
	}
	return "cpu"
}

// checkMetrics fails the test unless expr parses and each metric it reads is one fleetflow exports.
func checkMetrics(t *testing.T, where, expr string) {
	t.Helper()
	parsed, err := promql.ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return
	}
	exported := observe.Names()
	read := 0
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if v, ok := node.(*parser.VectorSelector); ok {
			read++
			if _, found := slices.BinarySearch(exported, v.Name); !found {
				t.Errorf("%s reads %s, which fleetflow does not export", where, v.Name)
			}
		}
		return nil
	})
	if read == 0 {
		t.Errorf("%s: %q reads no metric", where, expr)
	}
}
