package ui_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fleetflow/fleetflow/consumers/ui/model/modeltest"
)

// BenchmarkFleetPage renders the Fleet page of 100 clusters of 1,000 nodes and the heat map of every cluster,
// as a browser opening the page loads them: the server time of the whole picture.
func BenchmarkFleetPage(b *testing.B) {
	f := modeltest.New(now)
	modeltest.Synthetic(f, 100, 1000, 1)
	h := newServer(b, f, nil, "")
	clusters := f.Model.Clusters()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		serve(b, h, "/")
		for _, c := range clusters {
			serve(b, h, "/heatmap.svg?cluster="+c.Name)
		}
	}
}

func serve(b *testing.B, h http.Handler, target string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: status %d", target, rec.Code)
	}
	_, _ = io.Copy(io.Discard, rec.Body)
}
