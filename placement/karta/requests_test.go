package karta

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	} {
		got := scaled(resource.MustParse(tt.q), tt.n)
		if got.Cmp(resource.MustParse(tt.want)) != 0 {
			t.Errorf("%s x %d = %s, want %s", tt.q, tt.n, got.String(), tt.want)
		}
	}
}
