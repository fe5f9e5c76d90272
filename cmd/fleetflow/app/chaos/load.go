package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// PyTorchJobs is the resource of the workloads a run submits: a gang kind every fleetflow fleet knows.
var PyTorchJobs = schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}

// gpuResource is the extended resource of the GPU gangs, and the key of the taint GPU nodes carry.
const gpuResource = "nvidia.com/gpu"

// fieldManager owns what a run writes to the control plane.
const fieldManager = "fleetflow-chaos"

// Workload is one workload a run submitted, with what the checks need to know of it.
type Workload struct {
	Namespace, Name string
	// Pods are its pods, as its replica specs request them.
	Pods []Pod
	// Deleted is set once the run has deleted it from the control plane.
	Deleted bool
}

// Pod is the requests of one pod, and whether it tolerates the GPU nodes' taint.
type Pod struct {
	Requests corev1.ResourceList
	GPU      bool
}

// LoadOptions are what a run submits, and how fast.
type LoadOptions struct {
	// Workloads is how many it submits in all.
	Workloads int
	// DeleteShare is the chance that a submission is followed by the deletion of a random live workload.
	DeleteShare float64
	// Namespaces are where workloads go, one drawn per workload.
	Namespaces []string
	// GPUShare is the share of workloads that are GPU gangs; the rest are one small CPU pod each.
	GPUShare float64
}

// load submits Workloads PyTorchJobs spread evenly over a duration, and deletes some. A write refused while
// the control plane is down is retried until it succeeds or the run ends: nothing is lost on the way in.
type load struct {
	opts   LoadOptions
	client dynamic.Interface
	rand   *rand.Rand
	log    *slog.Logger
	// last is when the last submission or deletion was accepted.
	last time.Time
}

// run submits the workloads over d and returns them, deleted ones marked.
func (l *load) run(ctx context.Context, d time.Duration) ([]*Workload, error) {
	var all, live []*Workload
	interval := d / time.Duration(max(l.opts.Workloads, 1))
	next := time.Now()
	for i := range l.opts.Workloads {
		if !sleep(ctx, time.Until(next)) {
			return all, ctx.Err()
		}
		next = next.Add(interval)
		w := l.workload(i)
		if err := l.retry(ctx, "submit "+w.Namespace+"/"+w.Name, func() error { return l.submit(ctx, w) }); err != nil {
			return all, err
		}
		all, live = append(all, w), append(live, w)
		l.last = time.Now()
		if l.rand.Float64() >= l.opts.DeleteShare {
			continue
		}
		j := l.rand.IntN(len(live))
		victim := live[j]
		live = append(live[:j], live[j+1:]...)
		if err := l.retry(ctx, "delete "+victim.Namespace+"/"+victim.Name, func() error { return l.remove(ctx, victim) }); err != nil {
			return all, err
		}
		victim.Deleted = true
		l.last = time.Now()
	}
	return all, nil
}

// workload draws the i-th workload: mostly a small CPU job, sometimes a gang of 1 to 4 GPU pods of 4 or 8
// GPUs, so that GPU capacity runs out, frees up on deletions, and Unschedulable verdicts change.
func (l *load) workload(i int) *Workload {
	w := &Workload{Namespace: l.opts.Namespaces[l.rand.IntN(len(l.opts.Namespaces))], Name: "chaos-" + strconv.Itoa(i)}
	if l.rand.Float64() >= l.opts.GPUShare {
		w.Pods = []Pod{{Requests: requests("100m", "64Mi", 0)}}
		return w
	}
	gpus := int64(4 * (1 + l.rand.IntN(2)))
	for range 1 + l.rand.IntN(4) {
		w.Pods = append(w.Pods, Pod{Requests: requests("4", "32Gi", gpus), GPU: true})
	}
	return w
}

func requests(cpu, memory string, gpus int64) corev1.ResourceList {
	r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)}
	if gpus > 0 {
		r[gpuResource] = *resource.NewQuantity(gpus, resource.DecimalSI)
	}
	return r
}

// object is the PyTorchJob of w: a Master of one pod, and its other pods as Workers.
func (w *Workload) object() *unstructured.Unstructured {
	replicas := map[string]any{"Master": replicaSpec(w.Pods[0], 1)}
	if n := len(w.Pods) - 1; n > 0 {
		replicas["Worker"] = replicaSpec(w.Pods[1], n)
	}
	content := map[string]any{
		"apiVersion": PyTorchJobs.GroupVersion().String(),
		"kind":       "PyTorchJob",
		"metadata":   map[string]any{"name": w.Name, "namespace": w.Namespace},
		"spec":       map[string]any{"pytorchReplicaSpecs": replicas},
	}
	return &unstructured.Unstructured{Object: runtime.DeepCopyJSON(content)}
}

func replicaSpec(p Pod, count int) map[string]any {
	limits := map[string]any{}
	for name, q := range p.Requests {
		limits[string(name)] = q.String()
	}
	pod := map[string]any{"containers": []any{map[string]any{
		"name": "pytorch", "image": "example.com/chaos:1", "resources": map[string]any{"requests": limits, "limits": limits},
	}}}
	if p.GPU {
		pod["tolerations"] = []any{map[string]any{"key": gpuResource, "operator": "Exists", "effect": "NoSchedule"}}
	}
	return map[string]any{"replicas": int64(count), "template": map[string]any{"spec": pod}}
}

func (l *load) submit(ctx context.Context, w *Workload) error {
	_, err := l.client.Resource(PyTorchJobs).Namespace(w.Namespace).Apply(ctx, w.Name, w.object(),
		metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	return err
}

func (l *load) remove(ctx context.Context, w *Workload) error {
	err := l.client.Resource(PyTorchJobs).Namespace(w.Namespace).Delete(ctx, w.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// retry runs f until it succeeds, once a second, or until ctx ends.
func (l *load) retry(ctx context.Context, what string, f func() error) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		l.log.Info("chaos: retrying", "what", what, "error", err)
		if !sleep(ctx, time.Second) {
			return fmt.Errorf("%s: %w", what, errors.Join(ctx.Err(), err))
		}
	}
}
