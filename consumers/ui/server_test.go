package ui_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/consumers/ui"
	"github.com/fleetflow/fleetflow/consumers/ui/model/modeltest"
	"github.com/fleetflow/fleetflow/placement/explain"
	"github.com/fleetflow/fleetflow/schemas"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// fakeStreams answers the history pages with what it is given, and records what it was asked.
type fakeStreams struct {
	explanation *explain.Explanation
	trail       []audit.AuditRecord
	report      *replay.WhatIfReport
	asked       []string
	whatIf      replay.WhatIf
}

func (f *fakeStreams) Explain(_ context.Context, workload string) (*explain.Explanation, error) {
	f.asked = append(f.asked, workload)
	if f.explanation == nil {
		return nil, errors.New("explain: workload is not in the fleet view")
	}
	return f.explanation, nil
}

func (f *fakeStreams) Trail(_ context.Context, w *audit.WorkloadSelector, _ int) ([]audit.AuditRecord, error) {
	f.asked = append(f.asked, w.Kind+"/"+w.Namespace+"/"+w.Name)
	return f.trail, nil
}

func (f *fakeStreams) WhatIf(_ context.Context, w replay.WhatIf) (*replay.WhatIfReport, error) {
	f.whatIf = w
	return f.report, nil
}

// demo is a small fleet: two clusters (west silent), a placed job and an unschedulable one.
func demo() *modeltest.Fleet {
	f := modeltest.New(now).Cluster("east", 3*time.Second).Cluster("west", time.Hour).
		Node("east", "gpu-1", 64, 512, 8, 8).Node("east", "gpu-2", 64, 512, 8, 2).Node("east", "cpu-1", 32, 128, 0, 0).
		Node("west", "gpu-1", 64, 512, 8, 0)
	f.Workload("team-a", "placed", time.Hour).Workload("team-a", "stuck", time.Minute)
	f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-a", "placed", 1, 2, 8, []string{"east"}, nil), false)
	f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-a", "stuck", 1, 4, 32, nil,
		map[string]string{"east": "needs 32 GPUs, 6 free", "west": "NotReady: no heartbeat"}), false)
	return f
}

func newServer(t testing.TB, f *modeltest.Fleet, streams ui.Streams, token string) http.Handler {
	t.Helper()
	s, err := ui.NewServer(ui.Config{Model: f.Model, Streams: streams, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

// answer is what a request got.
type answer struct {
	StatusCode int
	Header     http.Header
}

func get(t *testing.T, h http.Handler, target string, header ...string) (answer, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return answer{StatusCode: rec.Code, Header: rec.Header()}, rec.Body.String()
}

func wantAll(t *testing.T, body string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(body, p) {
			t.Errorf("the page lacks %q", p)
		}
	}
}

func TestFleetPageShowsEveryCluster(t *testing.T) {
	h := newServer(t, demo(), nil, "")
	res, body := get(t, h, "/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	wantAll(t, body, `data-cluster="east"`, `data-cluster="west"`, "2 clusters, 1 Ready.", `class="badge ready">Ready`,
		`class="badge notready">NotReady`, "heartbeat 3s ago", "10 of 16 requested (62.5%)", `src="/heatmap.svg?cluster=east"`,
		"0/8: 1 nodes", "6/8: 1 nodes")
	if n := strings.Count(body, "<meter"); n != 6 {
		t.Errorf("%d bars, want 6 (cpu, memory, GPUs of two clusters)", n)
	}
}

func TestHeatMapIsOneImagePerCluster(t *testing.T) {
	f := demo()
	for i := range 120 { // three rows of 50, one run per row but the first
		f.Node("west", fmt.Sprintf("gpu-%03d", i+100), 64, 512, 8, 8)
	}
	h := newServer(t, f, nil, "")
	res, body := get(t, h, "/heatmap.svg?cluster=west")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/svg+xml" {
		t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.HasPrefix(body, `<svg xmlns="http://www.w3.org/2000/svg" width="500" height="30"`) {
		t.Errorf("svg starts %.100q, want a 500x30 map (121 nodes in rows of 50)", body)
	}
	// gpu-1 (idle) sorts before gpu-100..gpu-219 (full).
	if n := strings.Count(body, "<rect x="); n != 4 {
		t.Errorf("%d cell runs, want 4 (the idle node, then a full run per row)", n)
	}
	if res, _ := get(t, h, "/heatmap.svg?cluster=nowhere"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown cluster: status %d, want 404", res.StatusCode)
	}
}

func rowNames(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<a href="/workload\?key=[^"]*">([^<]*)</a>`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestWorkloadsPageFiltersOnTheServer(t *testing.T) {
	f := demo()
	for i := range 60 {
		f.Workload("bulk", fmt.Sprintf("job-%02d", i), time.Minute)
	}
	h := newServer(t, f, nil, "")
	for _, tc := range []struct {
		query string
		want  []string
		has   string
	}{
		{"verdict=unschedulable", []string{"stuck"}, "1 workloads, page 1 of 1"},
		{"cluster=east&gpus=8", []string{"placed"}, "1 workloads"},
		{"namespace=bulk&size=20&page=3", []string{"job-40"}, "60 workloads, page 3 of 3"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			res, body := get(t, h, "/workloads?"+tc.query)
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			if got := rowNames(body); len(got) == 0 || got[0] != tc.want[0] {
				t.Errorf("rows %v, want first %v", got, tc.want)
			}
			wantAll(t, body, tc.has)
		})
	}
	_, body := get(t, h, "/workloads?namespace=bulk&size=20&page=2")
	wantAll(t, body, `href="/workloads?namespace=bulk&amp;page=1&amp;size=20" rel="prev"`, `href="/workloads?namespace=bulk&amp;page=3&amp;size=20" rel="next"`)
	res, body := get(t, h, "/workloads?pods=lots")
	if res.StatusCode != http.StatusBadRequest {
		t.Errorf("bad filter: status %d, want 400", res.StatusCode)
	}
	wantAll(t, body, "filter pods")
}

func TestWorkloadPageShowsVerdictExplanationAndTrail(t *testing.T) {
	streams := &fakeStreams{
		explanation: &explain.Explanation{Policy: "fill", Mode: "Single", Decision: explain.Decision{Status: "Unschedulable"},
			Clusters: []explain.Cluster{{Name: "east", Result: "FAIL", Reason: "capacity", Checks: []explain.Check{
				{Name: "Capacity", Result: "FAIL", Detail: "needs nvidia.com/gpu 32, has 6 free"}}}}},
		trail: []audit.AuditRecord{{Stream: schemas.StreamEvents, Sequence: 7, Stored: now,
			Payload: modeltest.Verdict("team-a", "stuck", 1, 4, 32, nil, map[string]string{"east": "full"})}},
	}
	h := newServer(t, demo(), streams, "")
	res, body := get(t, h, "/workload?key="+url.QueryEscape(modeltest.Ref("team-a", "stuck").Key()))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	wantAll(t, body, "Unschedulable by policy fill", "needs 32 GPUs, 6 free", "NotReady: no heartbeat",
		"Read by ResourceInterface <code>pytorchjob</code>: 4 pods", "needs nvidia.com/gpu 32, has 6 free",
		`<strong id="explain-decision">Unschedulable</strong>`, "analyzed by pytorchjob: 4 pods, requests nvidia.com/gpu=32, Unschedulable by policy fill; east: full")
	if want := []string{"PyTorchJob/team-a/stuck", "PyTorchJob/team-a/stuck"}; strings.Join(streams.asked, " ") != strings.Join(want, " ") {
		t.Errorf("asked the streams for %v, want %v", streams.asked, want)
	}
	if res, _ := get(t, h, "/workload?key=nothing"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown workload: status %d, want 404", res.StatusCode)
	}
}

// TestValuesFromTheStreamsAreText: names, reasons and labels are user input; they reach every page as text.
func TestValuesFromTheStreamsAreText(t *testing.T) {
	const evil = `<script>alert(1)</script>`
	f := demo()
	f.Workload("team-a", evil, time.Minute)
	f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-a", evil, 1, 1, 1, nil, map[string]string{"east": evil}), true)
	f.Apply(schemas.TypeClusterChanged, eventtestCluster(evil), false)
	h := newServer(t, f, &fakeStreams{}, "")
	for _, target := range []string{"/", "/workloads", "/live", "/workload?key=" + url.QueryEscape(modeltest.Ref("team-a", evil).Key())} {
		_, body := get(t, h, target)
		if strings.Contains(body, evil) || strings.Contains(body, "<script>alert") {
			t.Errorf("%s: the value is markup", target)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the value is not shown as text", target)
		}
		if n := len(regexp.MustCompile(`<script`).FindAllString(body, -1)); n != 1 {
			t.Errorf("%s: %d script elements, want only the page's own", target, n)
		}
	}
}

func eventtestCluster(label string) *schemas.ObjectChanged {
	c := modeltestCluster()
	c.Object["metadata"].(map[string]any)["labels"] = map[string]any{"note": label}
	return c
}

func modeltestCluster() *schemas.ObjectChanged {
	return &schemas.ObjectChanged{Object: map[string]any{"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": "east", "uid": "uid-east", "resourceVersion": "2"}}}
}

func TestEveryAnswerCarriesTheSecurityHeaders(t *testing.T) {
	h := newServer(t, demo(), nil, "")
	for _, target := range []string{"/", "/workloads", "/workload?key=x", "/live", "/whatif", "/heatmap.svg?cluster=east",
		"/assets/app.js", "/assets/style.css", "/nowhere"} {
		res, body := get(t, h, target)
		if got := res.Header.Get("Content-Security-Policy"); got != ui.ContentSecurityPolicy {
			t.Errorf("%s: Content-Security-Policy %q", target, got)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" || res.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", target, res.Header)
		}
		if strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
			if regexp.MustCompile(`<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=|https?://`).MatchString(body) {
				t.Errorf("%s: inline script or style, an event handler attribute, or an outside URL", target)
			}
		}
	}
	if !strings.Contains(ui.ContentSecurityPolicy, "script-src 'self';") || strings.Contains(ui.ContentSecurityPolicy, "unsafe") {
		t.Errorf("policy %q allows more than this origin's scripts", ui.ContentSecurityPolicy)
	}
}

func TestOnlyReads(t *testing.T) {
	h := newServer(t, demo(), nil, "")
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, target := range []string{"/", "/workloads", "/whatif"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
			if rec.Code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: status %d, want 405", method, target, rec.Code)
			}
		}
	}
}

func TestTokenGuardsEveryPage(t *testing.T) {
	const token = "s3cret-token"
	h := newServer(t, demo(), nil, token)
	for _, tc := range []struct {
		name   string
		header []string
		want   int
	}{
		{"none", nil, http.StatusUnauthorized},
		{"wrong", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"bearer", []string{"Authorization", "Bearer " + token}, http.StatusOK},
		{"cookie", []string{"Cookie", "fleetflow_ui_token=" + token}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, target := range []string{"/", "/workloads", "/live", "/heatmap.svg?cluster=east"} {
				res, body := get(t, h, target, tc.header...)
				if res.StatusCode != tc.want {
					t.Errorf("%s: status %d, want %d", target, res.StatusCode, tc.want)
				}
				if tc.want == http.StatusUnauthorized && (strings.Contains(body, "east") || res.Header.Get("WWW-Authenticate") == "") {
					t.Errorf("%s: an unauthorized answer shows the fleet or asks for no token", target)
				}
			}
		})
	}
	if res, _ := get(t, h, "/healthz"); res.StatusCode != http.StatusOK {
		t.Errorf("/healthz: status %d, want 200 without the token", res.StatusCode)
	}

	// The sign-in form sets the cookie for the pages a browser opens next.
	for _, tc := range []struct {
		token string
		want  int
	}{{"nope", http.StatusUnauthorized}, {token, http.StatusSeeOther}} {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"token": {tc.token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Fatalf("login with %q: status %d, want %d", tc.token, rec.Code, tc.want)
		}
		if tc.want == http.StatusSeeOther {
			c := rec.Result().Cookies()
			if len(c) != 1 || c[0].Value != token || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode {
				t.Errorf("cookies %v, want one HttpOnly SameSite=Strict with the token", c)
			}
		}
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/token"
	writeFile(t, file, " abc \n")
	if got, err := ui.ReadToken(file); err != nil || got != "abc" {
		t.Errorf("ReadToken(file) = %q, %v; want abc", got, err)
	}
	writeFile(t, file, "\n")
	if _, err := ui.ReadToken(file); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("an empty file: %v, want an error saying so", err)
	}
	t.Setenv(ui.TokenEnv, "from-env")
	if got, _ := ui.ReadToken(""); got != "from-env" {
		t.Errorf("ReadToken(\"\") = %q, want the environment's", got)
	}
}

func TestLiveEventsStreamNewEntries(t *testing.T) {
	f := demo()
	srv := httptest.NewServer(newServer(t, f, nil, ""))
	defer srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/live/events", nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	lines := bufio.NewReader(res.Body)
	if line, _ := lines.ReadString('\n'); line != "retry: 2000\n" { // subscribed once the first line is out
		t.Fatalf("first line %q", line)
	}
	f.Apply(schemas.TypePlacementVerdict, modeltest.Verdict("team-a", "<b>new</b>", 1, 1, 1, []string{"east"}, nil), true)
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			if !strings.Contains(data, `"what":"Placed"`) || !strings.Contains(data, `\u003cb\u003enew`) {
				t.Errorf("entry %s", data)
			}
			return
		}
	}
}

func TestWhatIfRunsThePolicyGiven(t *testing.T) {
	streams := &fakeStreams{report: &replay.WhatIfReport{Replay: &replay.Result{},
		Summary: replay.WhatIfSummary{Workloads: 2, Move: 1, LosePlacement: 1},
		Workloads: []replay.WorkloadChange{
			{Workload: "PyTorchJob/team-a/placed", Change: replay.Moves, Recorded: replay.Outcome{Status: schemas.VerdictPlaced, Clusters: []string{"east"}},
				WhatIf: replay.Outcome{Status: schemas.VerdictPlaced, Clusters: []string{"west"}}},
			{Workload: "PyTorchJob/team-a/stuck", Change: replay.Loses, Recorded: replay.Outcome{Status: schemas.VerdictPlaced, Clusters: []string{"east"}},
				WhatIf: replay.Outcome{Status: schemas.VerdictUnschedulable, Reasons: map[string]string{"west": "too small"}}}},
		Clusters: []replay.ClusterShare{{Cluster: "east", Resource: "cpu", Allocatable: "160", Before: 50, After: 0}}}}
	h := newServer(t, demo(), streams, "")
	const policy = "apiVersion: fleetflow.io/v1alpha1\nkind: SchedulePolicy\nmetadata: {name: west-only}\nspec: {}\n"

	var body strings.Builder
	form := multipart.NewWriter(&body)
	part, _ := form.CreateFormFile("file", "policy.yaml")
	_, _ = io.WriteString(part, policy)
	_ = form.WriteField("delete", "old, older")
	_ = form.Close()
	req := httptest.NewRequest(http.MethodPost, "/whatif", strings.NewReader(body.String()))
	req.Header.Set("Content-Type", form.FormDataContentType())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if len(streams.whatIf.Policies) != 1 || streams.whatIf.Policies[0]["kind"] != "SchedulePolicy" ||
		strings.Join(streams.whatIf.Delete, ",") != "old,older" {
		t.Errorf("what-if run %+v", streams.whatIf)
	}
	wantAll(t, rec.Body.String(), "<strong>1</strong> move, <strong>1</strong> become unschedulable", "becomes unschedulable",
		"Placed on east", "Placed on west", "west: too small", `<meter min="0" max="100" value="50.0">`)

	for _, tc := range []struct{ name, form, want string }{
		{"nothing", "", "give a SchedulePolicy"},
		{"not YAML", "policy=" + url.QueryEscape("kind: [unclosed"), "policy: document 1"},
	} {
		req := httptest.NewRequest(http.MethodPost, "/whatif", strings.NewReader(tc.form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: status %d, want 400 saying %q", tc.name, rec.Code, tc.want)
		}
	}
}
