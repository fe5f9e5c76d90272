package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/consumers/ui/model"
	"github.com/fleetflow/fleetflow/placement/explain"
	"github.com/fleetflow/fleetflow/schemas"
)

// historyTimeout bounds a page that reads or replays the history.
const historyTimeout = 2 * time.Minute

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"age":          age,
	"percent":      func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"meterValue":   func(f float64) string { return strconv.FormatFloat(min(f, 100), 'f', 1, 64) },
	"join":         strings.Join,
	"workloadURL":  workloadURL,
	"sortedKeys":   func(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) },
	"time":         func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") },
	"heatMapURL":   func(cluster string) string { return "/heatmap.svg?cluster=" + url.QueryEscape(cluster) },
	"quantity":     func(r model.Resource, v int64) string { return r.Format(v) },
	"changeText":   changeText,
	"outcomeText":  outcomeText,
	"resourceText": func(r explain.Resources) string { return r.String() },
	"qty":          func(q resource.Quantity) string { return q.String() },
}

// age writes a duration as people read an age: 42s, 5m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + "s"
	case d < time.Hour:
		return strconv.Itoa(int(d.Minutes())) + "m"
	case d < 48*time.Hour:
		return strconv.Itoa(int(d.Hours())) + "h"
	}
	return strconv.Itoa(int(d.Hours()/24)) + "d"
}

func workloadURL(key string) string { return "/workload?key=" + url.QueryEscape(key) }

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request) {
	clusters := s.model.Clusters()
	type card struct {
		model.Cluster
		Histogram []freeCount
	}
	cards := make([]card, len(clusters))
	ready := 0
	for i, c := range clusters {
		nodes, _ := s.model.GPUNodes(c.Name)
		cards[i] = card{Cluster: c, Histogram: histogram(nodes)}
		if c.Ready {
			ready++
		}
	}
	s.render(w, r, "fleet", map[string]any{"Title": "Fleet", "Clusters": cards, "Ready": ready, "Synced": s.model.Synced()})
}

// filterOf reads the Workloads page's filter from the query.
func filterOf(q url.Values) model.Filter {
	return model.Filter{Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name"), Verdict: q.Get("verdict"),
		Cluster: q.Get("cluster"), Phase: q.Get("phase"), Pods: q.Get("pods"), GPUs: q.Get("gpus"), Age: q.Get("age")}
}

// pageSizes are the page sizes offered; the first is the default.
var pageSizes = []int{50, 20, 100, 500}

func (s *Server) workloadsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := filterOf(q)
	number, _ := strconv.Atoi(q.Get("page"))
	size, _ := strconv.Atoi(q.Get("size"))
	if !slices.Contains(pageSizes, size) {
		size = pageSizes[0]
	}
	page, err := s.model.Workloads(f, number, size)
	data := map[string]any{"Title": "Workloads", "Filter": f, "Sizes": pageSizes}
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		data["Error"] = err.Error()
		s.render(w, r, "workloads", data)
		return
	}
	link := func(n int) string {
		v := url.Values{}
		for _, k := range []string{"kind", "namespace", "name", "verdict", "cluster", "phase", "pods", "gpus", "age"} {
			if q.Get(k) != "" {
				v.Set(k, q.Get(k))
			}
		}
		v.Set("size", strconv.Itoa(page.Size))
		v.Set("page", strconv.Itoa(n))
		return "/workloads?" + v.Encode()
	}
	data["Page"] = page
	if page.Number > 1 {
		data["Prev"] = link(page.Number - 1)
	}
	if page.Number < page.Pages {
		data["Next"] = link(page.Number + 1)
	}
	s.render(w, r, "workloads", data)
}

func (s *Server) workloadPage(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	d, ok := s.model.Workload(key)
	if !ok {
		s.fail(w, r, http.StatusNotFound, fmt.Errorf("workload %q: the streams hold no such workload (deleted, or not yet submitted)", key))
		return
	}
	data := map[string]any{"Title": d.Kind + " " + d.Namespace + "/" + d.Name, "W": d}
	if v := d.Verdict; v != nil {
		data["Outcome"] = schemas.VerdictOutcome(v.Status, v.Clusters)
		type reason struct{ Cluster, Code, Reason string }
		var reasons []reason
		for _, c := range slices.Sorted(maps.Keys(v.Reasons)) {
			reasons = append(reasons, reason{c, v.ReasonCodes[c], v.Reasons[c]})
		}
		data["Reasons"] = reasons
	}
	if s.streams == nil {
		data["HistoryError"] = "this view was started without access to the history"
		s.render(w, r, "workload", data)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), historyTimeout)
	defer cancel()
	name := d.Kind + "/" + d.Name
	if d.Namespace != "" {
		name = d.Kind + "/" + d.Namespace + "/" + d.Name
	}
	if e, err := s.streams.Explain(ctx, name); err != nil {
		data["ExplainError"] = err.Error()
	} else {
		data["Explain"] = e
	}
	sel := &audit.WorkloadSelector{Group: d.Group, Kind: d.Kind, Namespace: d.Namespace, Name: d.Name}
	trail, err := s.streams.Trail(ctx, sel, trailLimit)
	if err != nil {
		data["TrailError"] = err.Error()
	}
	type step struct {
		Stored           time.Time
		Stream, Type     string
		Sequence         uint64
		Summary          string
		Unreadable       bool
		Subject, EventID string
	}
	steps := make([]step, 0, len(trail))
	for _, rec := range slices.Backward(trail) {
		steps = append(steps, step{Stored: rec.Stored, Stream: rec.Stream, Type: rec.Event.Type(), Sequence: rec.Sequence,
			Summary: rec.Summary(), Unreadable: rec.Err != nil, Subject: rec.Subject})
	}
	data["Trail"] = steps
	data["TrailLimit"] = trailLimit
	s.render(w, r, "workload", data)
}

// trailLimit bounds the audit trail a workload page shows (the newest).
const trailLimit = 200

// liveBacklog is how many recent entries the Live page starts with.
const liveBacklog = 100

func (s *Server) livePage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "live", map[string]any{"Title": "Live", "Entries": s.model.Recent(liveBacklog)})
}

// liveEvents streams the live entries as server-sent events, one "entry" event of JSON each, until the client
// goes.
func (s *Server) liveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // the feed lasts as long as the page
	entries, cancel := s.model.Subscribe()
	defer cancel()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 2000\n: connected\n\n"); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case <-keepAlive.C:
			msg = []byte(": keep-alive\n\n")
		case e := <-entries:
			data, err := json.Marshal(e)
			if err != nil {
				continue
			}
			msg = fmt.Appendf(nil, "id: %s\nevent: entry\ndata: %s\n\n", strings.ReplaceAll(e.ID, "\n", ""), data)
		}
		if _, err := w.Write(msg); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

func (s *Server) whatIfPage(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, "whatif", map[string]any{"Title": "What-if", "Available": s.streams != nil})
}

// maxPolicyUpload bounds a what-if request.
const maxPolicyUpload = 1 << 20

func (s *Server) whatIfRun(w http.ResponseWriter, r *http.Request) {
	data := map[string]any{"Title": "What-if", "Available": s.streams != nil}
	r.Body = http.MaxBytesReader(w, r.Body, maxPolicyUpload)
	var text []byte
	if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/") {
		if err := r.ParseMultipartForm(maxPolicyUpload); err != nil {
			s.whatIfFailed(w, r, data, fmt.Errorf("the upload: %w", err))
			return
		}
		if f, _, err := r.FormFile("file"); err == nil {
			text, err = io.ReadAll(f)
			_ = f.Close()
			if err != nil {
				s.whatIfFailed(w, r, data, fmt.Errorf("the uploaded file: %w", err))
				return
			}
		}
	}
	pasted := r.PostFormValue("policy")
	data["Policy"] = pasted
	if len(bytes.TrimSpace(text)) == 0 {
		text = []byte(pasted)
	}
	var wi replay.WhatIf
	wi.Delete = strings.FieldsFunc(r.PostFormValue("delete"), func(c rune) bool { return c == ',' || c == ' ' || c == '\n' })
	data["Delete"] = strings.Join(wi.Delete, ", ")
	wi.FromStart = r.PostFormValue("fromStart") != ""
	data["FromStart"] = wi.FromStart
	if len(bytes.TrimSpace(text)) > 0 {
		objects, err := readPolicies(text)
		if err != nil {
			s.whatIfFailed(w, r, data, err)
			return
		}
		wi.Policies = objects
	}
	if len(wi.Policies) == 0 && len(wi.Delete) == 0 {
		s.whatIfFailed(w, r, data, errors.New("give a SchedulePolicy (paste or upload it) or the name of one to delete"))
		return
	}
	if s.streams == nil {
		s.whatIfFailed(w, r, data, errors.New("this view was started without access to the history"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), historyTimeout)
	defer cancel()
	report, err := s.streams.WhatIf(ctx, wi)
	if err != nil {
		s.whatIfFailed(w, r, data, err)
		return
	}
	data["Report"] = report
	counts := map[string]int{}
	for _, c := range report.Workloads {
		counts[c.Change]++
	}
	data["Same"] = counts[replay.Same]
	s.render(w, r, "whatif", data)
}

func (s *Server) whatIfFailed(w http.ResponseWriter, r *http.Request, data map[string]any, err error) {
	w.WriteHeader(http.StatusBadRequest)
	data["Error"] = err.Error()
	s.render(w, r, "whatif", data)
}

// readPolicies reads every document of YAML or JSON as an object, as `fleetflow replay --policy` reads a file.
func readPolicies(data []byte) ([]map[string]any, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("policy: document %d: %w", doc, err)
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("policy: no object in the text")
	}
	return out, nil
}

// changeText names a what-if change as the page shows it.
func changeText(change string) string {
	switch change {
	case replay.Moves:
		return "moves"
	case replay.Loses:
		return "becomes unschedulable"
	case replay.Gains:
		return "gets placed"
	case replay.Other:
		return "changes"
	}
	return "stays"
}

func outcomeText(o replay.Outcome) string {
	if o.Status == "" {
		return "-"
	}
	return schemas.VerdictOutcome(o.Status, o.Clusters)
}
