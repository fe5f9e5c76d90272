package karta

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary bytes to the RI loader: it must return RIs or an error, never panic, and
// every RI it returns must either compile or be rejected with an error.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("../../deploy/resourceinterfaces/*.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(riHeader + "    - {name: w, specDefinition: {podTemplateSpecPath: '.a[]'}}\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("a: [1, 2\n"))
	f.Add([]byte(`{"apiVersion":"optimization.nvidia.com/v1alpha1","kind":"ResourceInterface"}`))
	saved := evalTimeout
	evalTimeout = 20 * time.Millisecond // fuzzed RIs may hold expressions that never end
	defer func() { evalTimeout = saved }()
	cr := map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": map[string]any{"name": "f"},
		"spec": map[string]any{"workerGroupSpecs": []any{map[string]any{"groupName": "g", "replicas": 2.0,
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}}}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		ris, err := ParseResourceInterfaces(data, "fuzz.yaml")
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		for _, ri := range ris {
			c, err := Compile(ri, "fuzz.yaml")
			if err != nil {
				continue
			}
			if c.Name == "" {
				t.Fatal("compiled RI without a name")
			}
			// Whatever the RI says, analysis returns a result or an error.
			obj := map[string]any{}
			for k, v := range cr {
				obj[k] = v
			}
			obj["apiVersion"], obj["kind"] = c.GVK.GroupVersion().String(), c.GVK.Kind
			if a, err := c.Analyze(obj); err == nil && a.TotalPods < 0 {
				t.Fatal("negative pod count")
			}
		}
	})
}

// FuzzAnalyze runs every built-in RI on arbitrary JSON: each analysis returns a result or an error,
// never panics, and a result is internally consistent.
func FuzzAnalyze(f *testing.F) {
	builtins, err := Builtins()
	if err != nil {
		f.Fatal(err)
	}
	samples, _ := filepath.Glob("../../../shared/corpus/*/samples/*.yaml")
	for _, s := range samples {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		if obj, err := ParseObject(data, s); err == nil {
			if j, err := json.Marshal(obj); err == nil {
				f.Add(j)
			}
		}
	}
	f.Add([]byte(`{"apiVersion":"ray.io/v1","kind":"RayCluster","spec":{"workerGroupSpecs":[{"replicas":"x","numOfHosts":1e300}]}}`))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":-1,"template":[]}}`))
	f.Add([]byte(`{"spec":{"services":{"a":{"resources":{"limits":{"gpu":"lots"}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		for _, c := range builtins {
			// Analyze every RI on the same content, under its own GVK.
			obj["apiVersion"] = c.GVK.GroupVersion().String()
			obj["kind"] = c.GVK.Kind
			a, err := c.Analyze(obj)
			if err != nil {
				continue
			}
			var pods int64
			for _, ci := range a.Components {
				if ci.Pods < 0 {
					t.Fatalf("%s: negative pods %d", c.Name, ci.Pods)
				}
				pods += ci.Pods
			}
			if pods != a.TotalPods {
				t.Fatalf("%s: TotalPods %d != sum %d", c.Name, a.TotalPods, pods)
			}
		}
	})
}
