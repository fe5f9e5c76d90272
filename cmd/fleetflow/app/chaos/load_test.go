package chaos

import (
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeControlPlane records the writes load makes, and refuses the first refuse of them as an apiserver
// that is down would.
type fakeControlPlane struct {
	mu      sync.Mutex
	writes  []string // "apply ns/name" or "delete ns/name", in order
	refuse  int
	refused int
}

func (f *fakeControlPlane) client() *fake.FakeDynamicClient {
	c := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{PyTorchJobs: "PyTorchJobList"})
	record := func(verb string) k8stesting.ReactionFunc {
		return func(action k8stesting.Action) (bool, runtime.Object, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.refused < f.refuse {
				f.refused++
				return true, nil, errors.New("connection refused")
			}
			var name string
			switch a := action.(type) {
			case k8stesting.PatchAction:
				name = a.GetName()
			case k8stesting.DeleteAction:
				name = a.GetName()
			}
			f.writes = append(f.writes, verb+" "+action.GetNamespace()+"/"+name)
			return true, &unstructured.Unstructured{Object: map[string]any{}}, nil
		}
	}
	c.PrependReactor("patch", "pytorchjobs", record("apply"))
	c.PrependReactor("delete", "pytorchjobs", record("delete"))
	return c
}

func runLoad(t *testing.T, cp *fakeControlPlane, opts LoadOptions) []*Workload {
	t.Helper()
	l := &load{opts: opts, client: cp.client(), rand: rand.New(rand.NewPCG(3, 2)), log: slog.New(slog.DiscardHandler)}
	all, err := l.run(t.Context(), 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestLoadSubmitsEveryWorkloadAndDeletesTheOnesItMarks(t *testing.T) {
	cp := &fakeControlPlane{refuse: 2}
	all := runLoad(t, cp, LoadOptions{Workloads: 40, DeleteShare: 0.3, Namespaces: []string{"a", "b"}, GPUShare: 0.3})
	if len(all) != 40 {
		t.Fatalf("%d workloads, want 40", len(all))
	}
	position := map[string]int{}
	for i, w := range cp.writes {
		if _, seen := position[w]; seen {
			t.Errorf("%s written twice", w)
		}
		position[w] = i
	}
	deleted := 0
	for _, w := range all {
		k := key(w.Namespace, w.Name)
		applied, ok := position["apply "+k]
		if !ok {
			t.Errorf("%s never submitted (refused writes must be retried)", k)
		}
		removed, gone := position["delete "+k]
		if gone != w.Deleted {
			t.Errorf("%s: deleted on the control plane %v, marked deleted %v", k, gone, w.Deleted)
		}
		if gone && removed < applied {
			t.Errorf("%s deleted before it was submitted", k)
		}
		if w.Deleted {
			deleted++
		}
	}
	if deleted == 0 || deleted == len(all) {
		t.Errorf("%d of %d deleted with a delete share of 0.3", deleted, len(all))
	}
}

func TestLoadDrawsSmallJobsAndGPUGangs(t *testing.T) {
	all := runLoad(t, &fakeControlPlane{}, LoadOptions{Workloads: 60, Namespaces: []string{"a"}, GPUShare: 0.5})
	var cpu, gpu int
	for _, w := range all {
		obj := w.object()
		specs, _, _ := unstructured.NestedMap(obj.Object, "spec", "pytorchReplicaSpecs")
		master, _, _ := unstructured.NestedInt64(specs, "Master", "replicas")
		workers, _, _ := unstructured.NestedInt64(specs, "Worker", "replicas")
		if master != 1 || int(master+workers) != len(w.Pods) {
			t.Errorf("%s: Master %d and Worker %d replicas for %d pods", w.Name, master, workers, len(w.Pods))
		}
		gpus := w.Pods[0].Requests[gpuResource]
		switch {
		case !w.Pods[0].GPU && len(w.Pods) == 1 && gpus.IsZero():
			cpu++
		case w.Pods[0].GPU && len(w.Pods) <= 4 && (gpus.Equal(resource.MustParse("4")) || gpus.Equal(resource.MustParse("8"))):
			gpu++
			tolerations, _, _ := unstructured.NestedSlice(specs, "Master", "template", "spec", "tolerations")
			if len(tolerations) != 1 {
				t.Errorf("%s: a GPU gang with tolerations %v, want the GPU taint's", w.Name, tolerations)
			}
		default:
			t.Errorf("%s: pods %+v are neither a small CPU job nor a GPU gang", w.Name, w.Pods)
		}
	}
	if cpu == 0 || gpu == 0 {
		t.Errorf("%d CPU jobs and %d GPU gangs with a GPU share of 0.5", cpu, gpu)
	}
}
