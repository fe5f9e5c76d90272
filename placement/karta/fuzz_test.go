package karta

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"
)

// maxFuzzInput bounds a fuzzed RI or object: real ones are a few kilobytes, and bigger inputs only slow the
// fuzzer.
const maxFuzzInput = 64 << 10

// FuzzParse feeds arbitrary bytes to the RI loader, as a file (`fleetflow analyze --ri`) or as the JSON of an
// RI object from an event: it returns RIs or an error with a message, never panics, and every RI it returns
// compiles or is refused with a message. A compiled RI analyzes a CR and maps its status, or says why not.
func FuzzParse(f *testing.F) {
	// The built-in RIs, as YAML and as the JSON an event carries; and Karta's published ones (one of which is
	// not valid YAML) when the shared corpus is beside the repo.
	seeds, _ := filepath.Glob("../../deploy/resourceinterfaces/*.yaml")
	karta, _ := filepath.Glob("../../../shared/corpus/karta/*.yaml")
	for _, s := range append(seeds, karta...) {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		f.Add(data)
		if j, err := yaml.YAMLToJSON(data); err == nil {
			f.Add(j)
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
			"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}}}},
		"status": map[string]any{"state": "ready", "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
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
				if err.Error() == "" {
					t.Fatal("Compile failed with an empty message")
				}
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
			a, err := c.Analyze(obj)
			switch {
			case err != nil && err.Error() == "":
				t.Fatal("Analyze failed with an empty message")
			case err == nil && a.TotalPods < 0:
				t.Fatal("negative pod count")
			}
			if _, err := c.Phase(obj); err != nil && err.Error() == "" {
				t.Fatal("Phase failed with an empty message")
			}
		}
	})
}

// FuzzAnalyze runs every built-in RI on arbitrary JSON: each analysis returns a result or an error with a
// message, never panics, and a result is internally consistent. The same object analyzed again gives the same
// answer: the engine caches decoded templates, quantities and resource lists across analyses, and a cache that
// hands out what another analysis changed would not.
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
	f.Add([]byte(`{"spec":{"replicas":3,"template":{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m","nvidia.com/gpu":2}}}]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		var obj map[string]any
		if json.Unmarshal(data, &obj) != nil || obj == nil {
			return
		}
		for _, c := range builtins {
			// Analyze every RI on the same content, under its own GVK.
			obj["apiVersion"] = c.GVK.GroupVersion().String()
			obj["kind"] = c.GVK.Kind
			a, err := c.Analyze(obj)
			again, againErr := c.Analyze(obj)
			if (err == nil) != (againErr == nil) || (err != nil && err.Error() != againErr.Error()) {
				t.Fatalf("%s: analysis failed with %v, then with %v", c.Name, err, againErr)
			}
			if err != nil {
				if err.Error() == "" {
					t.Fatalf("%s: Analyze failed with an empty message", c.Name)
				}
				continue
			}
			if !equality.Semantic.DeepEqual(a, again) {
				t.Fatalf("%s: the same object analyzed twice:\n%#v\n%#v", c.Name, a, again)
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
			if _, err := c.Phase(obj); err != nil && err.Error() == "" {
				t.Fatalf("%s: Phase failed with an empty message", c.Name)
			}
		}
	})
}
