package karta

import (
	"sync"
	"testing"
)

// TestConcurrentAnalyze shares one compiled RI and the template cache between goroutines (run
// with -race); every goroutine must get the same answer.
func TestConcurrentAnalyze(t *testing.T) {
	obj := rayCluster64(t)
	c, _ := builtinRegistry(t).Lookup(GVKOf(obj))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				a, err := c.Analyze(obj)
				if err != nil {
					errs <- err
					return
				}
				if a.TotalPods != 65 {
					t.Errorf("TotalPods = %d, want 65", a.TotalPods)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestTypedInput: objects built in Go (typed maps and slices, int64) are analyzed like their JSON form.
func TestTypedInput(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "d", "labels": map[string]string{"app": "x"}},
		"spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"spec": map[string]any{
				"nodeSelector": map[string]string{"pool": "gpu"},
				"containers": []map[string]any{{"name": "c", "resources": map[string]any{
					"requests": map[string]string{"cpu": "2"}}}},
			}},
		},
	}
	a := analyzeBuiltin(t, obj)
	checkTotals(t, a, 3, map[string]string{"cpu": "6"})
	if a.Components[0].NodeSelector["pool"] != "gpu" {
		t.Errorf("nodeSelector = %v", a.Components[0].NodeSelector)
	}
}

// TestTemplateCacheKeepsContentApart: two templates differing in one value get different entries.
func TestTemplateCacheKeepsContentApart(t *testing.T) {
	a := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "resources": map[string]any{"requests": map[string]any{"cpu": "1"}}}}}}
	b := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}}}}
	if contentKey(specPodTemplate, a) == contentKey(specPodTemplate, b) {
		t.Fatal("different templates share a cache key")
	}
	if contentKey(specPodTemplate, a) == contentKey(specPodSpec, a) {
		t.Fatal("PodSpec and PodTemplateSpec forms share a cache key")
	}
	da, _ := decodeTemplate(a, specPodTemplate)
	db, _ := decodeTemplate(b, specPodTemplate)
	if da.requests.Cpu().String() != "1" || db.requests.Cpu().String() != "2" {
		t.Errorf("requests %v and %v, want 1 and 2", da.requests, db.requests)
	}
}
