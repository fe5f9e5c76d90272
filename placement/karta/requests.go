package karta

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EffectivePodRequests is what the kube-scheduler reserves for one pod of spec:
//   - a container requests, per resource, its request, or its limit when no request is given;
//   - the pod needs the larger of (all app containers + all sidecars, i.e. init containers with
//     restartPolicy Always) and, for each regular init container, its request plus the sidecars
//     started before it;
//   - pod-level resources (spec.resources, on by default since Kubernetes 1.34) replace that sum for the
//     resources they may set (cpu, memory, hugepages), a pod-level limit standing for a missing request as
//     the API's defaulting makes it;
//   - plus the pod overhead.
func EffectivePodRequests(spec *corev1.PodSpec) corev1.ResourceList {
	if spec == nil {
		return corev1.ResourceList{}
	}
	// Built in place, with scratch maps only when there are sidecars: an analysis computes this for
	// every template it has not seen before, and per-container maps were most of its allocations.
	running := corev1.ResourceList{}
	for i := range spec.Containers {
		addContainerRequests(running, &spec.Containers[i])
	}
	if !hasSidecar(spec.InitContainers) {
		// Without sidecars each init container runs alone, so the pod needs the larger of the app
		// containers' sum and each init container's request: no scratch maps at all.
		for i := range spec.InitContainers {
			maxContainerRequests(running, &spec.InitContainers[i])
		}
		return finishPodRequests(running, spec)
	}
	var sidecars, initPeak, step corev1.ResourceList
	for i := range spec.InitContainers {
		ic := &spec.InitContainers[i]
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			if sidecars == nil {
				sidecars = corev1.ResourceList{}
			}
			addContainerRequests(sidecars, ic)
			continue
		}
		// A regular init container runs alone next to the sidecars already started.
		if step == nil {
			step, initPeak = corev1.ResourceList{}, corev1.ResourceList{}
		} else {
			clear(step)
		}
		addContainerRequests(step, ic)
		addTo(step, sidecars)
		maxInto(initPeak, step)
	}
	addTo(running, sidecars)
	maxInto(running, initPeak)
	return finishPodRequests(running, spec)
}

// finishPodRequests applies the pod-level resources, adds the pod overhead and drops resources that come to zero.
func finishPodRequests(running corev1.ResourceList, spec *corev1.PodSpec) corev1.ResourceList {
	if pod := spec.Resources; pod != nil {
		for name, q := range pod.Limits {
			if _, requested := pod.Requests[name]; !requested && podLevelResource(name) {
				// The API's defaulting (defaultPodRequests) takes the containers' aggregate for an
				// overcommittable resource they request, and the pod-level limit otherwise.
				if _, fromContainers := running[name]; fromContainers && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
					continue
				}
				running[name] = q.DeepCopy()
			}
		}
		for name, q := range pod.Requests {
			if podLevelResource(name) {
				running[name] = q.DeepCopy()
			}
		}
	}
	addTo(running, spec.Overhead)
	for name, q := range running {
		if q.IsZero() {
			delete(running, name)
		}
	}
	return running
}

// podLevelResource tells the resources a pod's spec.resources may set.
func podLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// addContainerRequests adds what a container requests, applying "requests default to limits" per resource.
func addContainerRequests(dst corev1.ResourceList, c *corev1.Container) {
	for name, q := range c.Resources.Requests {
		addQuantity(dst, name, q)
	}
	for name, q := range c.Resources.Limits {
		if _, requested := c.Resources.Requests[name]; !requested {
			addQuantity(dst, name, q)
		}
	}
}

// maxContainerRequests raises dst to what a container requests, per resource.
func maxContainerRequests(dst corev1.ResourceList, c *corev1.Container) {
	for name, q := range c.Resources.Requests {
		maxQuantity(dst, name, q)
	}
	for name, q := range c.Resources.Limits {
		if _, requested := c.Resources.Requests[name]; !requested {
			maxQuantity(dst, name, q)
		}
	}
}

func hasSidecar(list []corev1.Container) bool {
	for i := range list {
		if p := list[i].RestartPolicy; p != nil && *p == corev1.ContainerRestartPolicyAlways {
			return true
		}
	}
	return false
}

func addTo(dst, src corev1.ResourceList) {
	for name, q := range src {
		addQuantity(dst, name, q)
	}
}

func addQuantity(dst corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	cur, ok := dst[name]
	if !ok {
		dst[name] = q.DeepCopy()
		return
	}
	cur.Add(q)
	dst[name] = cur
}

func maxInto(dst, src corev1.ResourceList) {
	for name, q := range src {
		maxQuantity(dst, name, q)
	}
}

func maxQuantity(dst corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
		dst[name] = q.DeepCopy()
	}
}

func hasResources(c *corev1.Container) bool {
	return len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0
}

// CountableLimit bounds the amount of one resource fleetflow counts in one quantity, in the units it counts the
// resource in (millicores for cpu, whole units for the rest): 2^50, a pebibyte of memory. Far beyond any node,
// and low enough that sums over a whole fleet never overflow.
const CountableLimit = 1 << 50

var (
	largestCPU   = *resource.NewMilliQuantity(1e15, resource.DecimalSI) // "1T": a trillion cores
	largestOther = *resource.NewQuantity(CountableLimit, resource.BinarySI)
)

// Largest is the largest quantity of a resource fleetflow counts (at most CountableLimit in the resource's
// units). A pod that asks for more is refused; a node that reports more is counted as having this much.
func Largest(name corev1.ResourceName) resource.Quantity {
	if name == corev1.ResourceCPU {
		return largestCPU
	}
	return largestOther
}

// scaled returns q × n. It works in milli-units while they fit in an int64 and in whole units
// beyond, which only rounds quantities far larger than any node has.
func scaled(q resource.Quantity, n int64) resource.Quantity {
	if n == 0 {
		return resource.Quantity{Format: q.Format}
	}
	v := q.Value()
	// MilliValue wraps around silently past MaxInt64/1000 whole units (10Pi of memory).
	if abs64(v) <= math.MaxInt64/1000 {
		if m := q.MilliValue(); m == 0 || (abs64(m) <= math.MaxInt64/abs64(n)) {
			return *resource.NewMilliQuantity(m*n, q.Format)
		}
	}
	if abs64(v) > math.MaxInt64/abs64(n) {
		return *resource.NewQuantity(math.MaxInt64, q.Format)
	}
	return *resource.NewQuantity(v*n, q.Format)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Quantities renders rl as canonical Kubernetes quantity strings, omitting zero quantities
// (the JSON form of fleetflow analyze).
func Quantities(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		if q.IsZero() {
			continue
		}
		out[string(name)] = q.String()
	}
	return out
}
