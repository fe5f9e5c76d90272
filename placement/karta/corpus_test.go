package karta

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/yaml"
)

// corpusDir finds ../shared/corpus from the package directory, or skips the test.
func corpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "corpus")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared corpus not found at %s: %v", dir, err)
	}
	return dir
}

type sample struct {
	file string
	obj  map[string]any
}

// corpusSamples reads every sample CR of the corpus.
func corpusSamples(t testing.TB) []sample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir(t), "*", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Skipf("no corpus samples: %v", err)
	}
	var out []sample
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, sample{file: filepath.Base(f), obj: obj})
	}
	return out
}

func loadCorpusSample(t testing.TB, framework, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir(t), framework, "samples", name))
	if err != nil {
		t.Skipf("corpus sample %s/%s absent: %v", framework, name, err)
	}
	obj, err := ParseObject(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// kartaFailures are the real samples Karta's published RIs cannot analyze, each for a reason read
// off the RI: the engine must fail as Karta does, naming the RI, component, path and CR.
var kartaFailures = map[string]struct{ component, path, reason string }{
	// Karta's rayjob.yaml reads instance ids from .spec.workerGroupSpecs, which a RayJob does not have
	// (its workers are under .spec.rayClusterSpec), so iterating it fails on every RayJob.
	"rayjob-batch-inference-gpu-nodeselector.yaml": {"worker", ".spec.rayClusterSpec.workerGroupSpecs[].template", "cannot iterate over: null"},
	"rayjob-pytorch-resnet-gpu-tolerations.yaml":   {"worker", ".spec.workerGroupSpecs[].groupName", "cannot iterate over: null"},
	"rayjob-sample.yaml":                           {"worker", ".spec.workerGroupSpecs[].groupName", "cannot iterate over: null"},
	"rayjob-tpu-v6e-16-multihost.yaml":             {"worker", ".spec.workerGroupSpecs[].groupName", "cannot iterate over: null"},
	// A RayCluster with only a head has no workerGroupSpecs to iterate.
	"raycluster-verl-4gpu.yaml": {"worker", ".spec.workerGroupSpecs[].template", "cannot iterate over: null"},
	// The operator's sample DynamoGraphDeployment has no services.
	"dgd-operator-sample.yaml": {"service", ".spec.services | .[] | .extraPodSpec.schedulerName", "cannot iterate over: null"},
}

// TestKartaRIsLoadAndAnalyzeCorpus loads every valid-YAML RI of Karta's examples unmodified and
// analyzes every corpus sample of its kind.
func TestKartaRIsLoadAndAnalyzeCorpus(t *testing.T) {
	dir := filepath.Join(corpusDir(t), "karta")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var compiled []*Compiled
	for _, f := range files {
		base := filepath.Base(f)
		if strings.HasPrefix(base, "crd-") || base == "mpijob.yaml" {
			continue // the CRD is not an RI; mpijob.yaml is not valid YAML (TestKartaInvalidYAMLRejected)
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ris, err := ParseResourceInterfaces(data, base)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if len(ris) != 1 {
			t.Fatalf("%s: got %d RIs, want 1", base, len(ris))
		}
		if len(ris[0].Warnings) > 0 {
			t.Errorf("%s: Karta's RI reads with warnings %v, want every field known", base, ris[0].Warnings)
		}
		c, err := Compile(ris[0], base)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		compiled = append(compiled, c)
	}
	if len(compiled) != 10 {
		t.Fatalf("compiled %d Karta RIs, want the 10 valid ones", len(compiled))
	}
	reg := NewRegistry(compiled...)
	analyzed := 0
	for _, s := range corpusSamples(t) {
		c, ok := reg.Lookup(GVKOf(s.obj))
		if !ok {
			continue // Karta has no RI for this kind (RayService, MPIJob whose RI is broken)
		}
		a, err := c.Analyze(s.obj)
		want, mustFail := kartaFailures[s.file]
		if mustFail {
			var ae *AnalysisError
			if !errors.As(err, &ae) {
				t.Errorf("%s: got %v, want an AnalysisError", s.file, err)
				continue
			}
			// The message names the RI, the component and the CR; the jq goes to debug logs through Expr.
			msg := err.Error()
			for _, part := range []string{c.Name, `component "` + want.component + `"`, want.reason, GVKOf(s.obj).Kind} {
				if !strings.Contains(msg, part) {
					t.Errorf("%s: error %q does not name %q", s.file, msg, part)
				}
			}
			if ae.Expr != want.path || strings.Contains(msg, want.path) {
				t.Errorf("%s: error %q with expression %q; want %q kept out of the message, for debug logs", s.file, msg, ae.Expr, want.path)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s with %s: %v", s.file, c.Name, err)
			continue
		}
		if a.ResourceInterface != c.Name {
			t.Errorf("%s: ResourceInterface = %q, want %q", s.file, a.ResourceInterface, c.Name)
		}
		analyzed++
	}
	if analyzed < 40 {
		t.Errorf("analyzed %d samples with Karta RIs, expected most of the corpus", analyzed)
	}
}

// TestKartaRIPodCounts pins what Karta's own RIs say for a few samples, computed by hand from the RI
// paths (not from the framework: Karta's examples often undercount, which is why we ship our own).
func TestKartaRIPodCounts(t *testing.T) {
	dir := filepath.Join(corpusDir(t), "karta")
	load := func(name string) *Compiled {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Skip(err)
		}
		ris, err := ParseResourceInterfaces(data, name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := Compile(ris[0], name)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tests := []struct {
		ri, framework, sample string
		pods                  int64
	}{
		// jobset.yaml counts replicatedJobs[].replicas only: replicas 2 of "rj" = 2 pods, although each
		// Job runs parallelism 2 (the true count, 4, comes from our RI).
		{"jobset.yaml", "jobset", "jobset-topology-aware-scheduling.yaml", 2},
		// lws.yaml: leaderTemplate is absent, so the leader path yields null (no leader); workers =
		// replicas 3 x (size 4 - 1) = 9.
		{"lws.yaml", "lws", "lws-exclusive-placement.yaml", 9},
		// dynamo.yaml: (replicas // 1) x (nodeCount // 1) per service: 1 + 2 + 2 + 1 + 1 = 7.
		{"dynamo.yaml", "dynamo", "dgd-sglang-disagg-planner.yaml", 7},
		// milvus.yaml reads .spec.components.queryNode.template, which the Milvus CRD does not have:
		// no pod definitions, so nothing to reserve.
		{"milvus.yaml", "milvus-operator", "milvus-cluster-demo.yaml", 0},
		// nimservice.yaml: replicas 2 of the root's fragmented pod.
		{"nimservice.yaml", "nim-operator", "nimservice-epp-2-replicas.yaml", 2},
		// kserve.yaml: one predictor (minReplicas unset: 1 pod); transformer path yields null.
		{"kserve.yaml", "kserve", "isvc-sklearn-rawdeployment-hpa.yaml", 1},
		// pytorch.yaml: Master 1 + Worker 3.
		{"pytorch.yaml", "training-operator", "pytorchjob-smoke-sendrecv-3-workers.yaml", 4},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			a, err := load(tt.ri).Analyze(loadCorpusSample(t, tt.framework, tt.sample))
			if err != nil {
				t.Fatal(err)
			}
			if a.TotalPods != tt.pods {
				t.Errorf("TotalPods = %d, want %d", a.TotalPods, tt.pods)
			}
		})
	}
}

// TestKartaInvalidYAMLRejected: Karta's mpijob.yaml has a key glued to the end of a quoted scalar
// (`status: "False"          running:` on line 23), which is not valid YAML.
func TestKartaInvalidYAMLRejected(t *testing.T) {
	path := filepath.Join(corpusDir(t), "karta", "mpijob.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	_, err = ParseResourceInterfaces(data, "mpijob.yaml")
	var ye *YAMLError
	if !errors.As(err, &ye) {
		t.Fatalf("got %v, want a YAMLError", err)
	}
	if ye.Source != "mpijob.yaml" || ye.Line < 23 || ye.Line > 24 {
		t.Errorf("error at %s:%d, want mpijob.yaml line 23 or 24 (the parser reports where it gives up)", ye.Source, ye.Line)
	}
	if !strings.HasPrefix(err.Error(), "mpijob.yaml:") {
		t.Errorf("message %q does not start with the file", err)
	}
}

// TestTemplatePathsNameTheTemplates checks, on every corpus sample a built-in RI analyzes, that each pod template
// path leads to the very template the analysis read, and that the kinds placement pins name theirs.
func TestTemplatePathsNameTheTemplates(t *testing.T) {
	pinnable := map[string]bool{"PyTorchJob": true, "JobSet": true, "LeaderWorkerSet": true, "RayCluster": true,
		"RayJob": true, "MPIJob": true}
	registry := builtinRegistry(t)
	for _, s := range corpusSamples(t) {
		c, ok := registry.Lookup(GVKOf(s.obj))
		if !ok {
			continue
		}
		a, err := c.Analyze(s.obj)
		if err != nil {
			continue // the corpus tests report analysis errors
		}
		for _, ci := range a.Components {
			name := s.file + " " + ComponentKey(ci.Name, ci.Instance)
			if ci.PodTemplatePath == nil {
				// KubeRay builds a RayJob's submitter pod itself unless the CR gives its template.
				if pinnable[GVKOf(s.obj).Kind] && ci.Name != "submitter" {
					t.Errorf("%s: no pod template path; its kind's pods cannot be pinned", name)
				}
				continue
			}
			var cur any = s.obj
			for _, seg := range ci.PodTemplatePath {
				switch x := cur.(type) {
				case map[string]any:
					cur = x[seg]
				case []any:
					i, err := strconv.Atoi(seg)
					if err != nil || i >= len(x) {
						t.Fatalf("%s: path %v: bad index %s", name, ci.PodTemplatePath, seg)
					}
					cur = x[i]
				default:
					t.Fatalf("%s: path %v runs through a %T", name, ci.PodTemplatePath, cur)
				}
			}
			template, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%s: path %v leads to %T, want a pod template", name, ci.PodTemplatePath, cur)
			}
			// The RI may add what the operator injects (an autoscaler sidecar); what the CR has is all there.
			spec, _ := template["spec"].(map[string]any)
			containers, _ := spec["containers"].([]any)
			for _, c := range containers {
				cname, _ := c.(map[string]any)["name"].(string)
				if !slices.ContainsFunc(ci.PodTemplate.Spec.Containers, func(a corev1.Container) bool { return a.Name == cname }) {
					t.Errorf("%s: path %v leads to container %s, which the analysed template lacks", name, ci.PodTemplatePath, cname)
				}
			}
		}
	}
}
