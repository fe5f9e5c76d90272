package karta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

func container(name string, requests, limits map[string]string) corev1.Container {
	c := corev1.Container{Name: name}
	toList := func(m map[string]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		rl := corev1.ResourceList{}
		for k, v := range m {
			rl[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return rl
	}
	c.Resources.Requests, c.Resources.Limits = toList(requests), toList(limits)
	return c
}

func sidecar(c corev1.Container) corev1.Container {
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

func TestEffectivePodRequests(t *testing.T) {
	tests := []struct {
		name string
		spec corev1.PodSpec
		want map[string]string
	}{
		{"limits stand in for missing requests, per resource", corev1.PodSpec{Containers: []corev1.Container{
			container("a", map[string]string{"cpu": "1"}, map[string]string{"cpu": "2", "memory": "1Gi"}),
		}}, map[string]string{"cpu": "1", "memory": "1Gi"}},
		{"app containers add up", corev1.PodSpec{Containers: []corev1.Container{
			container("a", map[string]string{"cpu": "1"}, nil), container("b", map[string]string{"cpu": "500m"}, nil),
		}}, map[string]string{"cpu": "1500m"}},
		// max(app 1 CPU, init 3 CPU) = 3; memory max(2Gi, 0) = 2Gi.
		{"a big init container dominates", corev1.PodSpec{
			InitContainers: []corev1.Container{container("init", map[string]string{"cpu": "3"}, nil)},
			Containers:     []corev1.Container{container("a", map[string]string{"cpu": "1", "memory": "2Gi"}, nil)},
		}, map[string]string{"cpu": "3", "memory": "2Gi"}},
		// Sidecar s1 (1) starts before init i1 (2): i1 needs 1+2 = 3; sidecar s2 (4) starts after i1.
		// Running: app 1 + sidecars 1 + 4 = 6, larger than 3.
		{"sidecars count with the app and before later inits", corev1.PodSpec{
			InitContainers: []corev1.Container{
				sidecar(container("s1", map[string]string{"cpu": "1"}, nil)),
				container("i1", map[string]string{"cpu": "2"}, nil),
				sidecar(container("s2", map[string]string{"cpu": "4"}, nil)),
			},
			Containers: []corev1.Container{container("a", map[string]string{"cpu": "1"}, nil)},
		}, map[string]string{"cpu": "6"}},
		// Sidecar 1 Gi before init 8Gi: init phase 9Gi beats running 1Gi + 2Gi.
		{"init phase with an earlier sidecar dominates", corev1.PodSpec{
			InitContainers: []corev1.Container{
				sidecar(container("s", map[string]string{"memory": "1Gi"}, nil)),
				container("i", map[string]string{"memory": "8Gi"}, nil),
			},
			Containers: []corev1.Container{container("a", map[string]string{"memory": "2Gi"}, nil)},
		}, map[string]string{"memory": "9Gi"}},
		{"overhead is added", corev1.PodSpec{
			Containers: []corev1.Container{container("a", map[string]string{"cpu": "1"}, nil)},
			Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		}, map[string]string{"cpu": "1250m"}},
		{"zero requests are omitted", corev1.PodSpec{Containers: []corev1.Container{
			container("a", map[string]string{"cpu": "0", "memory": "1Gi"}, nil),
		}}, map[string]string{"memory": "1Gi"}},
		// Pod-level requests replace the containers' sum for cpu and memory; a pod-level limit stands for a
		// missing request; other resources still come from the containers; the overhead comes on top.
		{"pod-level resources replace the containers' cpu and memory", corev1.PodSpec{
			Containers: []corev1.Container{container("a", map[string]string{"cpu": "1", "nvidia.com/gpu": "2"}, nil)},
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("8Gi")},
			},
			Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		}, map[string]string{"cpu": "4250m", "memory": "8Gi", "nvidia.com/gpu": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Quantities(EffectivePodRequests(&tt.spec))
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %s, want %s", k, got[k], v)
				}
			}
		})
	}
}

func TestScaledQuantities(t *testing.T) {
	for _, tt := range []struct {
		q    string
		n    int64
		want string
	}{
		{"500m", 3, "1500m"}, {"1Gi", 64, "64Gi"}, {"8", 0, "0"}, {"500Gi", 1000, "500000Gi"},
		// Past MaxInt64/1000 whole units, where milli-units wrap around.
		{"10Pi", 1, "10Pi"}, {"10Pi", 3, "30Pi"},
	} {
		got := scaled(resource.MustParse(tt.q), tt.n)
		if got.Cmp(resource.MustParse(tt.want)) != 0 {
			t.Errorf("%s x %d = %s, want %s", tt.q, tt.n, got.String(), tt.want)
		}
	}
}

// referencePodRequests is the Kubernetes rule written as plainly as possible, one map per step:
// the model the in-place EffectivePodRequests must agree with.
func referencePodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	requestsOf := func(c *corev1.Container) corev1.ResourceList {
		out := corev1.ResourceList{}
		for name, q := range c.Resources.Limits {
			out[name] = q.DeepCopy()
		}
		for name, q := range c.Resources.Requests {
			out[name] = q.DeepCopy()
		}
		return out
	}
	sum := func(dst, src corev1.ResourceList) {
		for name, q := range src {
			cur := dst[name].DeepCopy()
			cur.Add(q)
			dst[name] = cur
		}
	}
	larger := func(dst, src corev1.ResourceList) {
		for name, q := range src {
			if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
				dst[name] = q.DeepCopy()
			}
		}
	}
	running, sidecars, initPeak := corev1.ResourceList{}, corev1.ResourceList{}, corev1.ResourceList{}
	for i := range spec.Containers {
		sum(running, requestsOf(&spec.Containers[i]))
	}
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum(sidecars, requestsOf(ic))
			continue
		}
		step := requestsOf(ic)
		sum(step, sidecars)
		larger(initPeak, step)
	}
	sum(running, sidecars)
	larger(running, initPeak)
	if spec.Resources != nil {
		for name, q := range spec.Resources.Limits {
			if _, requested := spec.Resources.Requests[name]; !requested && podLevelResource(name) {
				// defaultPodRequests: the containers' aggregate for cpu/memory they request, else the limit.
				if _, fromContainers := running[name]; fromContainers && (name == "cpu" || name == "memory") {
					continue
				}
				running[name] = q.DeepCopy()
			}
		}
		for name, q := range spec.Resources.Requests {
			if podLevelResource(name) {
				running[name] = q.DeepCopy()
			}
		}
	}
	sum(running, spec.Overhead)
	for name, q := range running {
		if q.IsZero() {
			delete(running, name)
		}
	}
	return running
}

func TestEffectivePodRequestsMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		quantities := []string{"0", "100m", "1", "2", "8", "1Gi", "512Mi", "3"}
		names := []string{"cpu", "memory", "nvidia.com/gpu"}
		list := func(label string) corev1.ResourceList {
			n := rapid.IntRange(0, 3).Draw(t, label+"-n")
			if n == 0 && rapid.Bool().Draw(t, label+"-nil") {
				return nil
			}
			rl := corev1.ResourceList{}
			for i := range n {
				name := rapid.SampledFrom(names).Draw(t, label+"-name")
				rl[corev1.ResourceName(name)] = resource.MustParse(rapid.SampledFrom(quantities).Draw(t, label+"-q"+string(rune('0'+i))))
			}
			return rl
		}
		containers := func(label string, init bool) []corev1.Container {
			out := make([]corev1.Container, rapid.IntRange(0, 3).Draw(t, label))
			for i := range out {
				out[i].Resources.Requests = list(label + "-req")
				out[i].Resources.Limits = list(label + "-lim")
				if init && rapid.Bool().Draw(t, label+"-sidecar") {
					always := corev1.ContainerRestartPolicyAlways
					out[i].RestartPolicy = &always
				}
			}
			return out
		}
		spec := &corev1.PodSpec{Containers: containers("containers", false), InitContainers: containers("init", true), Overhead: list("overhead")}
		if rapid.Bool().Draw(t, "pod-level") {
			spec.Resources = &corev1.ResourceRequirements{Requests: list("pod-req"), Limits: list("pod-lim")}
		}
		got, want := EffectivePodRequests(spec), referencePodRequests(spec)
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", Quantities(got), Quantities(want))
		}
		for name, q := range want {
			if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
				t.Fatalf("%s: got %v, want %v", name, Quantities(got), Quantities(want))
			}
		}
	})
}

// Pod-level limits without pod-level requests: the API defaults the pod's cpu and memory requests to what its
// containers request of them, and to the pod-level limit only for a resource no container requests
// (defaultPodRequests), and kube-scheduler fits the pod by those.
func TestPodLevelLimitsDefaultRequestsFromTheContainers(t *testing.T) {
	limits := corev1.ResourceList{"cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi")}
	tests := []struct {
		name       string
		containers []corev1.Container
		want       map[string]string
	}{
		{"containers request both", []corev1.Container{
			container("main", map[string]string{"cpu": "2", "memory": "8Gi"}, nil),
			container("side", map[string]string{"cpu": "1", "memory": "1Gi"}, nil)},
			map[string]string{"cpu": "3", "memory": "9Gi"}},
		{"containers request cpu only", []corev1.Container{container("main", map[string]string{"cpu": "2"}, nil)},
			map[string]string{"cpu": "2", "memory": "64Gi"}},
		{"a container limit stands in for its request", []corev1.Container{container("main", nil, map[string]string{"memory": "4Gi"})},
			map[string]string{"cpu": "16", "memory": "4Gi"}},
		{"no container requests", []corev1.Container{container("main", nil, nil)},
			map[string]string{"cpu": "16", "memory": "64Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EffectivePodRequests(&corev1.PodSpec{Resources: &corev1.ResourceRequirements{Limits: limits}, Containers: tt.containers})
			if len(got) != len(tt.want) {
				t.Errorf("requests %v, want %v", Quantities(got), tt.want)
			}
			for name, w := range tt.want {
				if g := got[corev1.ResourceName(name)]; g.Cmp(resource.MustParse(w)) != 0 {
					t.Errorf("%s = %s, want %s", name, g.String(), w)
				}
			}
		})
	}
}
