package karta

import (
	"fmt"
	"strings"
	"testing"
)

// rayCluster64 builds a RayCluster of 64 worker hosts: 4 groups of 4 replicas x 4 hosts, plus a head.
func rayCluster64(tb testing.TB) map[string]any {
	var b strings.Builder
	b.WriteString(`
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: big, namespace: ml}
spec:
  headGroupSpec:
    template:
      spec:
        containers: [{name: ray-head, image: rayproject/ray, resources: {requests: {cpu: "8", memory: 32Gi}}}]
  workerGroupSpecs:
`)
	for g := range 4 {
		fmt.Fprintf(&b, `  - groupName: group-%d
    replicas: 4
    minReplicas: 1
    maxReplicas: 8
    numOfHosts: 4
    template:
      spec:
        nodeSelector: {cloud.google.com/gke-accelerator: nvidia-h100-80gb}
        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
        initContainers: [{name: init, image: busybox, resources: {requests: {cpu: 100m}}}]
        containers:
        - name: ray-worker
          image: rayproject/ray
          resources: {requests: {cpu: "32", memory: 256Gi, nvidia.com/gpu: "8"}, limits: {nvidia.com/gpu: "8"}}
`, g)
	}
	obj, err := ParseObject([]byte(b.String()), "bench")
	if err != nil {
		tb.Fatal(err)
	}
	return obj
}

func TestRayCluster64(t *testing.T) {
	// 1 head + 4 groups x 4 replicas x 4 hosts = 65 pods; GPUs 64 x 8.
	checkTotals(t, analyzeBuiltin(t, rayCluster64(t)), 65, map[string]string{
		"cpu": fmt.Sprint(8 + 64*32), "memory": fmt.Sprintf("%dGi", 32+64*256), "nvidia.com/gpu": "512"})
}

// benchmarkBuiltinAnalysis measures one analysis of obj with its precompiled built-in RI.
func benchmarkBuiltinAnalysis(b *testing.B, obj map[string]any) {
	b.Helper()
	c, ok := builtinRegistry(b).Lookup(GVKOf(obj))
	if !ok {
		b.Fatalf("no built-in RI for %v", GVKOf(obj))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Analyze(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeRayCluster64 measures one analysis of a 64-host RayCluster with a precompiled RI.
func BenchmarkAnalyzeRayCluster64(b *testing.B) {
	benchmarkBuiltinAnalysis(b, rayCluster64(b))
}

// BenchmarkAnalyzeRayCluster64Cold changes a template every iteration, so every worker template
// misses the decoded-template cache: the cost of a CR seen for the first time.
func BenchmarkAnalyzeRayCluster64Cold(b *testing.B) {
	obj := rayCluster64(b)
	c, _ := builtinRegistry(b).Lookup(GVKOf(obj))
	groups := obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		for j, g := range groups {
			spec := g.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			spec["priorityClassName"] = fmt.Sprintf("p%d-%d", i, j)
		}
		if _, err := c.Analyze(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeRayCluster64ColdResources is the cold case with resource lists never seen
// before either (the engine interns converted resource lists by content).
func BenchmarkAnalyzeRayCluster64ColdResources(b *testing.B) {
	obj := rayCluster64(b)
	c, _ := builtinRegistry(b).Lookup(GVKOf(obj))
	groups := obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		for j, g := range groups {
			spec := g.(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			spec["priorityClassName"] = fmt.Sprintf("p%d-%d", i, j)
			worker := spec["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)
			worker["requests"].(map[string]any)["cpu"] = fmt.Sprintf("%dm", 32000+i*4+j)
			worker["limits"].(map[string]any)["memory"] = fmt.Sprintf("%dMi", 262144+i*4+j)
			initc := spec["initContainers"].([]any)[0].(map[string]any)["resources"].(map[string]any)
			initc["requests"].(map[string]any)["cpu"] = fmt.Sprintf("%dm", 100+i*4+j)
		}
		if _, err := c.Analyze(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeRayCluster64Rescaled changes replica counts every iteration, as updates and
// autoscaling do; the templates stay the same.
func BenchmarkAnalyzeRayCluster64Rescaled(b *testing.B) {
	obj := rayCluster64(b)
	c, _ := builtinRegistry(b).Lookup(GVKOf(obj))
	groups := obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		for _, g := range groups {
			g.(map[string]any)["replicas"] = float64(1 + i%8)
		}
		if _, err := c.Analyze(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// workerTemplate64 is one worker group's pod template of rayCluster64, as the jq path yields it.
func workerTemplate64(b *testing.B) any {
	obj := rayCluster64(b)
	return obj["spec"].(map[string]any)["workerGroupSpecs"].([]any)[0].(map[string]any)["template"]
}

// BenchmarkConvertTemplate and BenchmarkDecodeTemplateJSON compare the direct conversion of one
// worker template with the JSON decode it replaces.
func BenchmarkConvertTemplate(b *testing.B) {
	v := workerTemplate64(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := convertTemplate(v, specPodTemplate); !ok {
			b.Fatal("template not converted")
		}
	}
}

func BenchmarkDecodeTemplateJSON(b *testing.B) {
	v := workerTemplate64(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeTemplateJSON(v, specPodTemplate); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEffectivePodRequests(b *testing.B) {
	t, _ := convertTemplate(workerTemplate64(b), specPodTemplate)
	b.ReportAllocs()
	for b.Loop() {
		EffectivePodRequests(&t.Spec)
	}
}
