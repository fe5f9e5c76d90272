package e2e

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers"
	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/pipeline"
	"github.com/fleetflow/fleetflow/schemas"
)

const fieldManager = "fleetflow-e2e"

var pytorchJobKind = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

const aThenB = "testdata/policies/a-then-b.yaml"

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile("testdata/fleet.yaml")))
}

// env is one test's view of the fleet plus a running pipeline.
type env struct {
	t            *testing.T
	fleet        *localfleet.Fleet
	controlPlane *kube.Clients
	clusters     map[string]*kube.Clients
	bus          *pipeline.Bus
	logs         *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	sb strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sb.String()
}

func clientsFor(t *testing.T, c *localfleet.Cluster) *kube.Clients {
	t.Helper()
	clients, err := kube.NewClients(c.RESTConfig())
	if err != nil {
		t.Fatalf("clients for %s: %v", c.Name, err)
	}
	return clients
}

// newEnv connects to the package's fleet, installs fleetflow's and the test frameworks' CRDs, registers
// the workload clusters and the given policies on the control plane, and starts the whole pipeline in
// process on a fresh embedded JetStream; it returns once the placer can see every cluster's nodes.
// Everything stops when the test ends.
func newEnv(t *testing.T, policyFiles ...string) *env {
	t.Helper()
	fleet := localfleettest.Fleet(t)
	ctx := t.Context()
	e := &env{t: t, fleet: fleet, controlPlane: clientsFor(t, fleet.ControlPlane), clusters: map[string]*kube.Clients{},
		logs: &syncBuffer{}}
	for _, c := range fleet.Workloads {
		e.clusters[c.Name] = clientsFor(t, c)
	}
	spec := fleetSpec(t)
	crds := readObjects(t, "testdata/crds/pytorchjobs.yaml")
	for _, clients := range append([]*kube.Clients{e.controlPlane}, e.clusterClients()...) {
		if err := clients.Apply(ctx, fieldManager, crds...); err != nil {
			t.Fatalf("install CRDs: %v", err)
		}
	}
	if err := pipeline.InstallControlPlaneCRDs(ctx, e.controlPlane, fieldManager); err != nil {
		t.Fatal(err)
	}
	expected := map[string]int{}
	for _, c := range spec.Clusters {
		target, _ := fleet.Cluster(c.Name)
		kubeconfig, err := os.ReadFile(target.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := pipeline.RegisterCluster(ctx, e.controlPlane, c.Name, kubeconfig, c.Labels, fieldManager); err != nil {
			t.Fatal(err)
		}
		expected[c.Name] = len(c.AllNodes())
	}
	for _, f := range policyFiles {
		if err := e.controlPlane.Apply(ctx, fieldManager, readObjects(t, f)...); err != nil {
			t.Fatal(err)
		}
	}

	log := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runCtx, cancel := context.WithCancel(context.Background())
	b, err := pipeline.OpenBus(runCtx, pipeline.BusOptions{DataDir: t.TempDir(), Streams: schemas.DefaultStreamOptions()}, t.Name(), log)
	if err != nil {
		cancel()
		t.Fatalf("open bus: %v", err)
	}
	e.bus = b
	all := &pipeline.AllInOne{ControlPlane: e.controlPlane, Placer: consumers.PlacerConfig{HeartbeatTimeout: 6 * time.Second}}
	done := make(chan error, 1)
	go func() { done <- all.Run(runCtx, b, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("pipeline ended with %v", err)
		}
		b.Close()
		if t.Failed() {
			t.Logf("pipeline log:\n%s", e.logs.String())
		}
	})
	waitCtx, stop := context.WithTimeout(ctx, settle)
	defer stop()
	if err := pipeline.WaitObserved(waitCtx, b, expected); err != nil {
		t.Fatal(err)
	}
	return e
}

func fleetSpec(t *testing.T) *fleetspec.Fleet {
	t.Helper()
	data, err := os.ReadFile("testdata/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fleetspec.Parse(data, "testdata/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func (e *env) clusterClients() []*kube.Clients {
	out := make([]*kube.Clients, 0, len(e.clusters))
	for _, c := range e.clusters {
		out = append(out, c)
	}
	return out
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.FromSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := kube.DecodeYAML(data, path)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// get reads an object from a cluster; nil when it does not exist.
func get(t *testing.T, c *kube.Clients, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	gvr, _, err := c.ResourceFor(obj)
	if err != nil {
		t.Fatalf("resolve %s: %v", gvk, err)
	}
	got, err := c.Dynamic.Resource(gvr).Namespace(namespace).Get(context.Background(), name, getOptions)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return got
}

// eventually polls cond until it holds, failing the test with what after the deadline.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
