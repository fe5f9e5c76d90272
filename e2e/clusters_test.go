package e2e

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/logbuf"
)

// clusterManagerTest is the shared fleet's control plane, with fleetflow's CRDs, for a ClusterManager of the
// test's own.
type clusterManagerTest struct {
	t            *testing.T
	controlPlane *kube.Clients
	// kubeconfig reaches the control plane's own apiserver, which no Cluster of the shared fleet names: a second
	// Cluster of one apiserver is refused (TestASecondClusterOfOneApiserverIsRefused).
	kubeconfig []byte
}

var clusterGVR = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"}

func newClusterManagerTest(t *testing.T) *clusterManagerTest {
	t.Helper()
	fleet := localfleettest.Fleet(t)
	c := &clusterManagerTest{t: t, controlPlane: e2eenv.ClientsFor(t, fleet.ControlPlane)}
	if err := app.InstallControlPlaneCRDs(t.Context(), c.controlPlane, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	var err error
	if c.kubeconfig, err = os.ReadFile(fleet.ControlPlane.KubeconfigPath); err != nil {
		t.Fatal(err)
	}
	return c
}

// register registers the Cluster name with kubeconfig (RegisterCluster: its Secret is cluster-<name>-kubeconfig),
// and deletes both when the test ends.
func (c *clusterManagerTest) register(name string, kubeconfig []byte) {
	c.t.Helper()
	if err := app.RegisterCluster(c.t.Context(), c.controlPlane, name, kubeconfig, nil, nil, e2eenv.FieldManager); err != nil {
		c.t.Fatal(err)
	}
	c.forget(name, "cluster-"+name+"-kubeconfig")
}

// forget deletes the Cluster name and its Secret when the test ends.
func (c *clusterManagerTest) forget(name, secret string) {
	c.t.Cleanup(func() {
		_ = c.controlPlane.Dynamic.Resource(clusterGVR).Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = c.controlPlane.Core.CoreV1().Secrets(app.SystemNamespace).Delete(context.Background(), secret, metav1.DeleteOptions{})
	})
}

// start runs m on the control plane, resyncing every 200 ms, until the test ends.
func (c *clusterManagerTest) start(m *app.ClusterManager) {
	c.t.Helper()
	m.ControlPlane, m.Resync = c.controlPlane, 200*time.Millisecond
	if m.Log == nil {
		m.Log = slog.New(slog.NewTextHandler(&logbuf.Buffer{}, nil))
	}
	ctx, cancel := context.WithCancel(c.t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	c.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			c.t.Errorf("manager ended with %v", err)
		}
	})
}

// joined is the Cluster name's Joined condition as the control plane shows it.
func (c *clusterManagerTest) joined(name string) (status, reason, message string) {
	obj, err := c.controlPlane.Dynamic.Resource(clusterGVR).Get(c.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return "", "", ""
	}
	conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, cond := range conditions {
		if m, _ := cond.(map[string]any); m["type"] == "Joined" {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])
		}
	}
	return "", "", ""
}

// shows is a condition that the Cluster name shows Joined with status and reason, and message within its message.
func (c *clusterManagerTest) shows(name, status, reason, message string) func() bool {
	return func() bool {
		s, r, m := c.joined(name)
		return s == status && r == reason && strings.Contains(m, message)
	}
}

// TestClusterJoinsOnceItsSecretExists: a Cluster applied before its kubeconfig Secret (as `kubectl apply -f
// dir/` does, cluster.yaml before secret.yaml) is not run while the Secret is missing, joins once it exists,
// and a runner that stops with an error is started again, all without any change to the Cluster object.
func TestClusterJoinsOnceItsSecretExists(t *testing.T) {
	c := newClusterManagerTest(t)
	ctx := t.Context()
	if err := c.controlPlane.EnsureNamespace(ctx, app.SystemNamespace, e2eenv.FieldManager, nil); err != nil {
		t.Fatal(err)
	}
	const name, secretName = "late-secret", "late-secret-kubeconfig"
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"kubeconfigSecretRef": map[string]any{"name": secretName, "namespace": app.SystemNamespace}},
	}}
	if err := c.controlPlane.Apply(ctx, e2eenv.FieldManager, cluster); err != nil {
		t.Fatal(err)
	}
	c.forget(name, secretName)

	logs := &logbuf.Buffer{}
	var mu sync.Mutex
	starts := 0
	c.start(&app.ClusterManager{Log: slog.New(slog.NewTextHandler(logs, nil)),
		Run: func(ctx context.Context, cluster string, _ *kube.Clients, _ <-chan struct{}) error {
			if cluster != name {
				<-ctx.Done()
				return nil
			}
			mu.Lock()
			starts++
			first := starts == 1
			mu.Unlock()
			if first {
				return errors.New("the first run fails")
			}
			<-ctx.Done()
			return nil
		}})
	started := func() int {
		mu.Lock()
		defer mu.Unlock()
		return starts
	}

	e2eenv.Eventually(t, time.Minute, "the missing Secret reported", func() bool {
		return logs.Contains("kubeconfig unavailable")
	})
	e2eenv.Eventually(t, time.Minute, "the missing Secret shown on the Cluster", c.shows(name, "False", "KubeconfigUnavailable",
		"spec.kubeconfigSecretRef: Secret "+app.SystemNamespace+"/"+secretName+" not found"))
	if n := started(); n != 0 {
		t.Fatalf("the runner started %d times while its kubeconfig Secret was missing", n)
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": secretName, "namespace": app.SystemNamespace},
		"stringData": map[string]any{app.DefaultKubeconfigKey: string(c.kubeconfig)},
	}}
	if err := c.controlPlane.Apply(ctx, e2eenv.FieldManager, secret); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, time.Minute, "the runner started again after its first run failed", func() bool { return started() >= 2 })
	e2eenv.Eventually(t, time.Minute, "the Cluster shown joined", c.shows(name, "True", "RunnerStarted", ""))
}

// TestClusterKeepsWorkingThroughABadKubeconfig: a joined cluster whose kubeconfig Secret is replaced by an
// unusable one keeps its runner on the kubeconfig read before, and its Cluster says so; the Secret restored as
// it was clears the error without starting the runner again. Stopping the runner would fail the cluster's
// workloads over for a typo. A runner that fails shows why on its Cluster, not "joined".
func TestClusterKeepsWorkingThroughABadKubeconfig(t *testing.T) {
	c := newClusterManagerTest(t)
	ctx := t.Context()
	const name, failing = "kept-runner", "failing-runner"
	unreachable := []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:1\", insecure-skip-tls-verify: true}}]\n" +
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: t}}]\n")
	c.register(name, c.kubeconfig)
	c.register(failing, unreachable)
	secretName := "cluster-" + name + "-kubeconfig" // as RegisterCluster names it
	var mu sync.Mutex
	starts, stops := 0, 0
	c.start(&app.ClusterManager{Run: func(ctx context.Context, cluster string, _ *kube.Clients, _ <-chan struct{}) error {
		if cluster == failing {
			return errors.New("list nodes: forbidden")
		}
		if cluster != name {
			<-ctx.Done()
			return nil
		}
		mu.Lock()
		starts++
		mu.Unlock()
		<-ctx.Done()
		mu.Lock()
		stops++
		mu.Unlock()
		return nil
	}})
	runs := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return starts, stops
	}
	defer func() {
		if t.Failed() {
			status, reason, message := c.joined(name)
			t.Logf("Joined condition last read: %s %s %s", status, reason, message)
		}
	}()
	setSecret := func(data []byte) {
		t.Helper()
		secret, err := c.controlPlane.Core.CoreV1().Secrets(app.SystemNamespace).Get(ctx, secretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		secret.Data = map[string][]byte{app.DefaultKubeconfigKey: data}
		if _, err := c.controlPlane.Core.CoreV1().Secrets(app.SystemNamespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	e2eenv.Eventually(t, time.Minute, "the cluster joined", c.shows(name, "True", "RunnerStarted", "working with"))
	e2eenv.Eventually(t, time.Minute, "the failing runner shown on its Cluster",
		c.shows(failing, "False", "RunnerFailed", "the cluster's producer and applier stopped: list nodes: forbidden"))

	setSecret([]byte("apiVersion: v1\nkind: Config\nclusters: []\n"))
	e2eenv.Eventually(t, time.Minute, "the unusable kubeconfig shown, the runner kept",
		c.shows(name, "False", "KubeconfigInvalid", "names no cluster; still working with the kubeconfig read before"))
	if started, stopped := runs(); started != 1 || stopped != 0 {
		t.Fatalf("runner started %d and stopped %d times, want started once and never stopped", started, stopped)
	}

	setSecret(c.kubeconfig)
	e2eenv.Eventually(t, time.Minute, "the restored kubeconfig clears the error", c.shows(name, "True", "RunnerStarted", "working with"))
	if started, stopped := runs(); started != 1 || stopped != 0 {
		t.Errorf("runner started %d and stopped %d times, want started once and never stopped", started, stopped)
	}
}

// TestASecondClusterOfOneApiserverIsRefused: two Clusters whose kubeconfigs reach one apiserver would count its
// capacity twice, and a Delete through one would remove the other's copies. The one registered first runs; the
// second is not run, and its Joined condition names the first.
func TestASecondClusterOfOneApiserverIsRefused(t *testing.T) {
	c := newClusterManagerTest(t)
	const first, second = "apiserver-first", "apiserver-alias"
	for _, cluster := range []string{first, second} {
		c.register(cluster, c.kubeconfig)
		// Registered one after the other: creation times have a resolution of a second.
		e2eenv.Eventually(t, time.Minute, cluster+" created", func() bool {
			obj, err := c.controlPlane.Dynamic.Resource(clusterGVR).Get(t.Context(), cluster, metav1.GetOptions{})
			return err == nil && time.Since(obj.GetCreationTimestamp().Time) >= time.Second
		})
	}
	var mu sync.Mutex
	started := map[string]int{}
	c.start(&app.ClusterManager{Run: func(ctx context.Context, cluster string, _ *kube.Clients, _ <-chan struct{}) error {
		mu.Lock()
		started[cluster]++
		mu.Unlock()
		<-ctx.Done()
		return nil
	}})
	e2eenv.Eventually(t, time.Minute, "the second Cluster refused, naming the first",
		c.shows(second, "False", "DuplicateCluster", "is Cluster "+first+"'s"))
	e2eenv.Eventually(t, time.Minute, "the first Cluster joined", c.shows(first, "True", "RunnerStarted", ""))
	mu.Lock()
	defer mu.Unlock()
	if started[first] != 1 || started[second] != 0 {
		t.Errorf("runners started %v, want %s once and %s never", started, first, second)
	}
}

// TestDeletedClusterIsNoLongerReported: a deleted Cluster's runner is told at once to report the cluster no more
// (a heartbeat or APIs sent after the deletion showed a cluster that is gone, in the placer and in the state
// stream for good), and is kept until its applier drained; registered again meanwhile, the cluster gets a
// runner that reports it again.
func TestDeletedClusterIsNoLongerReported(t *testing.T) {
	c := newClusterManagerTest(t)
	ctx := t.Context()
	const name = "retiring"
	register := func() {
		t.Helper()
		if err := app.RegisterCluster(ctx, c.controlPlane, name, c.kubeconfig, nil, nil, e2eenv.FieldManager); err != nil {
			t.Fatal(err)
		}
	}
	deregister := func() {
		t.Helper()
		if err := c.controlPlane.Dynamic.Resource(clusterGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.register(name, c.kubeconfig)

	type run struct {
		retired <-chan struct{}
		stopped chan struct{}
	}
	var mu sync.Mutex
	var runs []*run
	var drained atomic.Bool
	c.start(&app.ClusterManager{RetireTimeout: time.Hour,
		Run: func(ctx context.Context, cluster string, _ *kube.Clients, retired <-chan struct{}) error {
			if cluster != name {
				<-ctx.Done()
				return nil
			}
			r := &run{retired: retired, stopped: make(chan struct{})}
			mu.Lock()
			runs = append(runs, r)
			mu.Unlock()
			<-ctx.Done()
			close(r.stopped)
			return nil
		},
		Drained: func(context.Context, string) (bool, error) { return drained.Load(), nil }})
	runAt := func(i int) *run {
		mu.Lock()
		defer mu.Unlock()
		if i < len(runs) {
			return runs[i]
		}
		return nil
	}
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}

	e2eenv.Eventually(t, time.Minute, "the cluster's runner started", func() bool { return runAt(0) != nil })
	if first := runAt(0); closed(first.retired) {
		t.Fatal("the runner of a registered cluster started retired")
	}
	deregister()
	e2eenv.Eventually(t, time.Minute, "the deleted cluster's runner told to report it no more", func() bool {
		return closed(runAt(0).retired)
	})
	if closed(runAt(0).stopped) {
		t.Fatal("the deleted cluster's runner stopped before its applier drained")
	}

	register()
	e2eenv.Eventually(t, time.Minute, "the cluster registered again reported by a new runner", func() bool {
		again := runAt(1)
		return again != nil && !closed(again.retired) && closed(runAt(0).stopped)
	})

	deregister()
	e2eenv.Eventually(t, time.Minute, "the new runner told to report the cluster no more", func() bool {
		return closed(runAt(1).retired)
	})
	drained.Store(true)
	e2eenv.Eventually(t, time.Minute, "the runner stopped once its applier drained", func() bool {
		return closed(runAt(1).stopped)
	})
	mu.Lock()
	defer mu.Unlock()
	if n := len(runs); n != 2 {
		t.Errorf("the runner started %d times, want twice", n)
	}
}

// TestClusterCRDRefusesInvalidTaints: the control plane refuses a Cluster whose taint has an effect Kubernetes
// does not know (a misspelt NoSchedule was taken and ignored, and workloads were placed where it was meant to
// keep them off), an empty key, a key or value that is no label key or value, naming the field of each.
func TestClusterCRDRefusesInvalidTaints(t *testing.T) {
	fleet := localfleettest.Fleet(t)
	controlPlane := e2eenv.ClientsFor(t, fleet.ControlPlane)
	ctx := t.Context()
	if err := app.InstallControlPlaneCRDs(ctx, controlPlane, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	clusters := controlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"})
	for _, tc := range []struct {
		name  string
		taint map[string]any
		want  []string // "" when the Cluster is accepted
	}{
		{"valid", map[string]any{"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}, nil},
		{"misspelt effect", map[string]any{"key": "maintenance", "value": "true", "effect": "NoSchedul"},
			[]string{"spec.taints[0].effect", `Unsupported value: "NoSchedul"`}},
		{"no effect", map[string]any{"key": "maintenance"}, []string{"spec.taints[0].effect", "Required value"}},
		{"empty key", map[string]any{"key": "", "effect": "NoSchedule"}, []string{"spec.taints[0].key"}},
		{"key with a space", map[string]any{"key": "a b", "effect": "NoSchedule"}, []string{"spec.taints[0].key", `"a b"`}},
		{"value with a slash", map[string]any{"key": "maintenance", "value": "a/b", "effect": "NoExecute"},
			[]string{"spec.taints[0].value", `"a/b"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster", "metadata": map[string]any{"name": "tainted"},
				"spec": map[string]any{
					"kubeconfigSecretRef": map[string]any{"name": "tainted-kubeconfig", "namespace": app.SystemNamespace},
					"taints":              []any{tc.taint},
				},
			}}
			_, err := clusters.Create(ctx, cluster, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want it refused saying %q", tc.want)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("refused with %q, want it to say %q", err, want)
				}
			}
		})
	}
}
