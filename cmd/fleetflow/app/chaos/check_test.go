package chaos

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetflow/fleetflow/schemas"
)

// seenBuilder builds what the clusters hold, for checkClusters and checkCapacity.
type seenBuilder struct{ o observed }

func clusters() *seenBuilder {
	return &seenBuilder{observed{controlPlane: map[string]map[string]string{}, copies: map[string][]copyOf{}}}
}

func (b *seenBuilder) placed(k, cluster string) *seenBuilder {
	b.o.controlPlane[k] = map[string]string{schemas.AnnotationPlacement: string(schemas.VerdictPlaced), schemas.AnnotationCluster: cluster}
	return b
}

func (b *seenBuilder) unschedulable(k, reasons string) *seenBuilder {
	b.o.controlPlane[k] = map[string]string{schemas.AnnotationPlacement: string(schemas.VerdictUnschedulable),
		schemas.AnnotationReasons: reasons}
	return b
}

func (b *seenBuilder) pending(k string) *seenBuilder {
	b.o.controlPlane[k] = map[string]string{}
	return b
}

func (b *seenBuilder) copyOn(k, cluster, decision string) *seenBuilder {
	b.o.copies[k] = append(b.o.copies[k], copyOf{cluster: cluster, decision: decision})
	return b
}

func cpuWorkload(name string) *Workload {
	return &Workload{Namespace: "ns", Name: name, Pods: []Pod{{Requests: requests("100m", "64Mi", 0)}}}
}

func gpuWorkload(name string, pods int, gpus int64) *Workload {
	w := &Workload{Namespace: "ns", Name: name}
	for range pods {
		w.Pods = append(w.Pods, Pod{Requests: requests("4", "32Gi", gpus), GPU: true})
	}
	return w
}

func deleted(w *Workload) *Workload {
	w.Deleted = true
	return w
}

func TestCheckClusters(t *testing.T) {
	tests := []struct {
		name      string
		workloads []*Workload
		seen      *seenBuilder
		want      []string // substrings, one per violation
	}{
		{"placed with its one copy", []*Workload{cpuWorkload("a")}, clusters().placed("ns/a", "east").copyOn("ns/a", "east", "1"), nil},
		{"unschedulable with reasons and no copy", []*Workload{cpuWorkload("a")}, clusters().unschedulable("ns/a", "east: no room"), nil},
		{"deleted and gone", []*Workload{deleted(cpuWorkload("a"))}, clusters(), nil},
		{"placed, copy elsewhere", []*Workload{cpuWorkload("a")}, clusters().placed("ns/a", "east").copyOn("ns/a", "west", "1"),
			[]string{`ns/a: Placed on "east", copies on [west]`}},
		{"placed twice", []*Workload{cpuWorkload("a")},
			clusters().placed("ns/a", "east").copyOn("ns/a", "east", "1").copyOn("ns/a", "west", "2"),
			[]string{`copies on [east west]`}},
		{"placed, no copy", []*Workload{cpuWorkload("a")}, clusters().placed("ns/a", "east"), []string{`copies on []`}},
		{"unschedulable without reasons", []*Workload{cpuWorkload("a")}, clusters().unschedulable("ns/a", ""),
			[]string{"Unschedulable with no reasons"}},
		{"unschedulable with a copy", []*Workload{cpuWorkload("a")}, clusters().unschedulable("ns/a", "r").copyOn("ns/a", "east", "1"),
			[]string{"Unschedulable, copies on [east]"}},
		{"no verdict", []*Workload{cpuWorkload("a")}, clusters().pending("ns/a"), []string{"no verdict"}},
		{"lost on the way in", []*Workload{cpuWorkload("a")}, clusters(), []string{"missing from the control plane"}},
		{"deleted, still on the control plane", []*Workload{deleted(cpuWorkload("a"))}, clusters().pending("ns/a"),
			[]string{"deleted, still on the control plane"}},
		{"deleted, copy left", []*Workload{deleted(cpuWorkload("a"))}, clusters().copyOn("ns/a", "east", "1"),
			[]string{"deleted, copies left on [east]"}},
		{"copy of nothing submitted", nil, clusters().copyOn("ns/x", "east", "1"), []string{"never submitted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, checkClusters(tt.seen.o, tt.workloads), tt.want)
		})
	}
}

func TestCheckCapacity(t *testing.T) {
	gpuTaint := corev1.Taint{Key: gpuResource, Value: "present", Effect: corev1.TaintEffectNoSchedule}
	gpuNode := func(name, gpus string) Node {
		return Node{Name: name, Taints: []corev1.Taint{gpuTaint}, Free: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"), gpuResource: resource.MustParse(gpus),
			corev1.ResourcePods: resource.MustParse("110")}}
	}
	cpuNode := func(name, pods string) Node {
		return Node{Name: name, Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"),
			corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse(pods)}}
	}
	nodes := map[string][]Node{"east": {gpuNode("g0", "8"), gpuNode("g1", "6"), gpuNode("g2", "6"), cpuNode("c0", "2")}}
	tests := []struct {
		name      string
		workloads []*Workload
		want      []string
	}{
		{"gangs that pack", []*Workload{gpuWorkload("a", 1, 4), gpuWorkload("b", 1, 8), gpuWorkload("c", 1, 4)}, nil},
		{"two 8-GPU pods on one 8-GPU node", []*Workload{gpuWorkload("a", 2, 8)}, []string{"cluster east: 1 of its 2 pods"}},
		{"GPUs in sum but not per node", []*Workload{gpuWorkload("a", 1, 8), gpuWorkload("b", 3, 4)},
			[]string{"cluster east: 1 of its 4 pods"}},
		{"CPU pods kept off tainted nodes", []*Workload{cpuWorkload("a"), cpuWorkload("b"), cpuWorkload("c")},
			[]string{"cluster east: 1 of its 3 pods"}},
		{"deleted workloads take no room", []*Workload{gpuWorkload("a", 1, 8), deleted(gpuWorkload("b", 1, 8)),
			gpuWorkload("c", 1, 4)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := clusters()
			for _, w := range tt.workloads {
				k := key(w.Namespace, w.Name)
				seen.placed(k, "east").copyOn(k, "east", "1")
			}
			assertViolations(t, checkCapacity(nodes, seen.o, tt.workloads), tt.want)
		})
	}
}

func TestCheckHistory(t *testing.T) {
	mark := func(seq uint64) applyMark { return applyMark{sequence: seq, mark: "e/" + strconv.FormatUint(seq, 10)} }
	h := history{
		newest:     map[string]map[string]applyMark{"ns/a": {"east": mark(3)}, "ns/b": {"east": mark(1)}},
		outcomes:   map[string]int{"d1": 1, "d2": 2},
		workloadOf: map[string]string{"d1": "ns/a", "d2": "ns/b"},
	}
	tests := []struct {
		name string
		seen *seenBuilder
		want []string
	}{
		{"copies carry the newest decisions", clusters().copyOn("ns/a", "east", "e/3").copyOn("ns/b", "east", "e/1"),
			[]string{"ns/b: decision d2 applied 2 times"}},
		{"a copy behind", clusters().copyOn("ns/a", "east", "e/2"),
			[]string{"ns/b: decision d2 applied 2 times", `ns/a: copy on east carries decision "e/2", the newest is "e/3"`}},
		{"a copy no decision made", clusters().copyOn("ns/a", "west", "e/3"),
			[]string{"ns/b: decision d2 applied 2 times", "ns/a: copy on west with no Apply decision"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertViolations(t, checkHistory(h, tt.seen.o), tt.want)
		})
	}
}

// assertViolations wants one violation per substring in want, in any order.
func assertViolations(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("violations %q, want %d matching %q", got, len(want), want)
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, w) }) {
			t.Errorf("violations %q, want one with %q", got, w)
		}
	}
}
