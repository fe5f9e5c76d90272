package benchbinding

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Unix(1_700_000_000, 0)

// podBuilder builds the pods the measurer reads.
type podBuilder struct{ p corev1.Pod }

func pod(createdAfter time.Duration) *podBuilder {
	return &podBuilder{p: corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0.Add(createdAfter))}}}
}

func (b *podBuilder) boundAfter(d time.Duration) *podBuilder {
	b.p.Spec.NodeName = "n1"
	b.p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(t0.Add(d))}}
	return b
}

func (b *podBuilder) unschedulable() *podBuilder {
	b.p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable}}
	return b
}

func (b *podBuilder) obj() corev1.Pod { return b.p }

func TestFullyBound(t *testing.T) {
	tests := []struct {
		name string
		pods []corev1.Pod
		want int
		ok   bool
	}{
		{"all bound at once", []corev1.Pod{pod(0).boundAfter(time.Second).obj(), pod(0).boundAfter(2 * time.Second).obj()}, 2, true},
		{"one pod missing", []corev1.Pod{pod(0).boundAfter(time.Second).obj()}, 2, false},
		{"one pod pending", []corev1.Pod{pod(0).boundAfter(time.Second).obj(), pod(0).unschedulable().obj()}, 2, false},
		{"bound after the limit", []corev1.Pod{pod(0).boundAfter(time.Second).obj(), pod(time.Second).boundAfter(31 * time.Second).obj()}, 2, false},
		{"bound right at the limit", []corev1.Pod{pod(0).boundAfter(30 * time.Second).obj()}, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fullyBound(tt.pods, tt.want, 30*time.Second); got != tt.ok {
				t.Errorf("fullyBound = %t, want %t", got, tt.ok)
			}
		})
	}
}

func TestUnschedulable(t *testing.T) {
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"PodScheduled False, Unschedulable", pod(0).unschedulable().obj(), true},
		{"bound", pod(0).boundAfter(time.Second).obj(), false},
		{"not looked at yet", pod(0).obj(), false},
	}
	for _, tt := range tests {
		if got := unschedulable(&tt.pod); got != tt.want {
			t.Errorf("%s: unschedulable = %t, want %t", tt.name, got, tt.want)
		}
	}
}

// The same seed draws the same fleet and gangs; the fleet's nodes keep at least one GPU free.
func TestSeededDraws(t *testing.T) {
	cfg := DefaultConfig()
	a, b := gangs(&cfg), gangs(&cfg)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("gang %d: %+v, then %+v", i, a[i], b[i])
		}
		if a[i].pods < 1 || a[i].pods > cfg.MaxPods || a[i].gpus < 1 || a[i].gpus > cfg.MaxGPUs {
			t.Errorf("gang %d: %d pods x %d GPUs, out of range", i, a[i].pods, a[i].gpus)
		}
	}
	spec := fleetSpec(&cfg)
	if got := len(spec.Clusters); got != cfg.Clusters {
		t.Fatalf("%d clusters, want %d", got, cfg.Clusters)
	}
	if free := freeGPUs(spec); free < cfg.Clusters*cfg.NodesPerCluster || free != freeGPUs(fleetSpec(&cfg)) {
		t.Errorf("free GPUs %d: want at least one a node, the same each time", free)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		adjust func(*Config)
		ok     bool
	}{
		{"defaults", func(*Config) {}, true},
		{"unknown kind", func(c *Config) { c.Kinds = []string{"mpijob"} }, false},
		{"unknown mode", func(c *Config) { c.Modes = []string{"summed-most"} }, false},
		{"more GPUs than a node has", func(c *Config) { c.MaxGPUs = 9 }, false},
		{"no workloads", func(c *Config) { c.Workloads = 0 }, false},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		tt.adjust(&cfg)
		if err := cfg.validate(); (err == nil) != tt.ok {
			t.Errorf("%s: validate = %v, want ok %t", tt.name, err, tt.ok)
		}
	}
}

// A kind whose operator the local fleet cannot run, or whose binary is missing, is refused before any fleet
// starts; Job's pods come from kube-controller-manager, which needs no operator.
func TestCheckOperators(t *testing.T) {
	tests := []struct {
		kinds []string
		want  string
	}{
		{[]string{"job"}, ""},
		{[]string{"pytorchjob"}, "training-operator"},
		{[]string{"job", "lws"}, "lws-controller"},
	}
	for _, tt := range tests {
		cfg := DefaultConfig()
		cfg.Kinds, cfg.BinDir = tt.kinds, t.TempDir()
		err := checkOperators(&cfg)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.kinds, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: error %v, want one naming %s", tt.kinds, err, tt.want)
		}
	}
}
