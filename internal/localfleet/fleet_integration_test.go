package localfleet_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

// TestFleetLifecycle starts a real fleet of a control plane and two workload clusters (three apiservers),
// uses it the way tests and the demo do, stops it, and checks that nothing is left running.
func TestFleetLifecycle(t *testing.T) {
	binDir := localfleettest.RequireBinaries(t)
	unlock, err := localfleettest.Lock(func(path string) { t.Logf("waiting for another fleet to finish (%s)", path) })
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	spec := readFleetSpec(t, filepath.Join("testdata", "fleet.yaml"))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var progressMu sync.Mutex
	var progress []localfleet.Progress
	fleet, err := localfleet.Start(ctx, localfleet.Options{
		Dir:      dir,
		Clusters: []string{"east", "west"},
		BinDir:   binDir,
		Logger:   slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		Progress: func(p localfleet.Progress) {
			progressMu.Lock()
			defer progressMu.Unlock()
			progress = append(progress, p)
		},
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = fleet.Stop(context.Background())
		}
	}()

	t.Run("clusters", func(t *testing.T) {
		var names []string
		for _, c := range fleet.Clusters() {
			names = append(names, c.Name)
		}
		if want := []string{localfleet.ControlPlaneName, "east", "west"}; !slices.Equal(names, want) {
			t.Errorf("clusters: got %v, want %v", names, want)
		}
		progressMu.Lock()
		defer progressMu.Unlock()
		for _, component := range []string{"etcd", localfleet.ControlPlaneName, "east", "west"} {
			if !hasProgress(progress, component, localfleet.StageReady) {
				t.Errorf("no %q progress for %s in %v", localfleet.StageReady, component, progress)
			}
		}
	})

	t.Run("readyz", func(t *testing.T) {
		for _, c := range fleet.Clusters() {
			client := kubernetes.NewForConfigOrDie(c.RESTConfig())
			body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err != nil || string(body) != "ok" {
				t.Errorf("%s /readyz: %q, %v", c.Name, body, err)
			}
		}
	})

	t.Run("kubeconfig", func(t *testing.T) {
		for _, c := range fleet.Clusters() {
			config, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
			if err != nil {
				t.Fatalf("%s: load kubeconfig: %v", c.Name, err)
			}
			if config.Host != c.Server {
				t.Errorf("%s: kubeconfig server %s, want %s", c.Name, config.Host, c.Server)
			}
			client := kubernetes.NewForConfigOrDie(config)
			// The apiserver's bootstrap controller creates "default" shortly after it turns ready.
			eventually(t, 30*time.Second, func() bool {
				_, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
				return err == nil
			}, c.Name+": namespace default through the kubeconfig")
			// Each cluster has its own etcd prefix, so an object created in one is absent from the others.
			marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "marker-" + c.Name, Namespace: "default"}}
			if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
				t.Fatalf("%s: create marker: %v", c.Name, err)
			}
		}
		for _, c := range fleet.Clusters() {
			client := kubernetes.NewForConfigOrDie(c.RESTConfig())
			list, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("%s: list config maps: %v", c.Name, err)
			}
			var markers []string
			for _, cm := range list.Items {
				if strings.HasPrefix(cm.Name, "marker-") {
					markers = append(markers, cm.Name)
				}
			}
			if want := []string{"marker-" + c.Name}; !slices.Equal(markers, want) {
				t.Errorf("%s: markers %v, want %v", c.Name, markers, want)
			}
		}
	})

	t.Run("state file", func(t *testing.T) {
		state, err := localfleet.ReadState(dir)
		if err != nil {
			t.Fatal(err)
		}
		if state.Etcd.URL != fleet.EtcdURL || !localfleet.ProcessAlive(state.Etcd.PID) {
			t.Errorf("etcd state %+v: want url %s and a live pid", state.Etcd, fleet.EtcdURL)
		}
		if len(state.Clusters) != 3 {
			t.Fatalf("state clusters: got %d, want 3", len(state.Clusters))
		}
		for i, c := range fleet.Clusters() {
			got := state.Clusters[i]
			wantRole := localfleet.RoleWorkload
			if i == 0 {
				wantRole = localfleet.RoleControlPlane
			}
			if got.Name != c.Name || got.Role != wantRole || got.Kubeconfig != c.KubeconfigPath || got.PID != c.PID || got.Server != c.Server {
				t.Errorf("state cluster %d: got %+v, want name %s role %s kubeconfig %s pid %d", i, got, c.Name, wantRole, c.KubeconfigPath, c.PID)
			}
			if !localfleet.ProcessAlive(got.PID) {
				t.Errorf("state cluster %s: pid %d not alive", got.Name, got.PID)
			}
		}
	})

	t.Run("second fleet in the same dir is refused", func(t *testing.T) {
		_, err := localfleet.Start(ctx, localfleet.Options{Dir: dir, BinDir: binDir})
		if err == nil || !strings.Contains(err.Error(), "already running") {
			t.Errorf("Start in a busy dir: got %v, want an 'already running' error", err)
		}
	})

	t.Run("seed", func(t *testing.T) {
		if err := localfleet.Seed(ctx, fleet, spec); err != nil {
			t.Fatalf("Seed: %v", err)
		}
		east, _ := fleet.Cluster("east")
		eastClient := kubernetes.NewForConfigOrDie(east.RESTConfig())
		nodes, err := eastClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// testdata/fleet.yaml: group gpu with count 2 gives gpu-0 and gpu-1; cordoned has no count.
		byName := map[string]corev1.Node{}
		for _, n := range nodes.Items {
			byName[n.Name] = n
		}
		if len(byName) != 3 {
			t.Fatalf("east nodes: got %d, want gpu-0, gpu-1, cordoned", len(byName))
		}
		gpuAllocatable := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("512Gi"),
			"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourcePods: resource.MustParse("110"),
		}
		for _, name := range []string{"gpu-0", "gpu-1"} {
			node := byName[name]
			assertResources(t, name+" allocatable", node.Status.Allocatable, gpuAllocatable)
			assertResources(t, name+" capacity", node.Status.Capacity, gpuAllocatable)
			if node.Labels["nvidia.com/gpu.product"] != "H100" {
				t.Errorf("%s labels: %v", name, node.Labels)
			}
			// Exactly the described taint: no node.kubernetes.io/not-ready added behind our back.
			if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "nvidia.com/gpu" || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
				t.Errorf("%s taints: got %v, want only nvidia.com/gpu=present:NoSchedule", name, node.Spec.Taints)
			}
			if node.Spec.Unschedulable {
				t.Errorf("%s: unschedulable, want schedulable", name)
			}
			assertReady(t, node)
		}
		cordoned := byName["cordoned"]
		if !cordoned.Spec.Unschedulable {
			t.Errorf("cordoned: want unschedulable")
		}
		assertResources(t, "cordoned allocatable", cordoned.Status.Allocatable, corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		})
		assertReady(t, cordoned)

		pods, err := eastClient.CoreV1().Pods(localfleet.SeedNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Only the gpu group has requested resources: one bound, running pod per gpu node.
		if len(pods.Items) != 2 {
			t.Fatalf("seed pods: got %d, want 2", len(pods.Items))
		}
		wantRequests := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
			"nvidia.com/gpu": resource.MustParse("2"),
		}
		for _, pod := range pods.Items {
			if pod.Spec.NodeName != strings.TrimPrefix(pod.Name, "requested-") || pod.Status.Phase != corev1.PodRunning {
				t.Errorf("pod %s: node %q phase %q, want its node and Running", pod.Name, pod.Spec.NodeName, pod.Status.Phase)
			}
			assertResources(t, pod.Name+" requests", pod.Spec.Containers[0].Resources.Requests, wantRequests)
		}

		west, _ := fleet.Cluster("west")
		westNodes, err := kubernetes.NewForConfigOrDie(west.RESTConfig()).CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil || len(westNodes.Items) != 3 {
			t.Errorf("west nodes: got %d (%v), want 3", len(westNodes.Items), err)
		}
		control := kubernetes.NewForConfigOrDie(fleet.ControlPlane.RESTConfig())
		ns, err := control.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{})
		if err != nil || ns.Labels["fleetflow.io/tier"] != "gold" {
			t.Errorf("control plane namespace team-a: %v, labels %v", err, ns.Labels)
		}

		// Seeding again must not write anything: every resourceVersion stays.
		before := resourceVersions(t, ctx, eastClient)
		if err := localfleet.Seed(ctx, fleet, spec); err != nil {
			t.Fatalf("second Seed: %v", err)
		}
		after := resourceVersions(t, ctx, eastClient)
		for name, rv := range before {
			if after[name] != rv {
				t.Errorf("second Seed changed %s: resourceVersion %s -> %s", name, rv, after[name])
			}
		}
	})

	pids := fleet.PIDs()
	if err := fleet.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	for _, pid := range pids {
		if localfleet.ProcessAlive(pid) {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
	if _, err := localfleet.ReadState(dir); err == nil {
		t.Errorf("state file still present after Stop")
	}
	pidFiles, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*.pid"))
	rootPIDFiles, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	if left := slices.Concat(pidFiles, rootPIDFiles); len(left) > 0 {
		t.Errorf("pid files left after Stop: %v", left)
	}
}

func readFleetSpec(t *testing.T, path string) *fleetspec.Fleet {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := fleetspec.Parse(data, path)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func resourceVersions(t *testing.T, ctx context.Context, client kubernetes.Interface) map[string]string {
	t.Helper()
	versions := map[string]string{}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		versions["node/"+n.Name] = n.ResourceVersion
	}
	pods, err := client.CoreV1().Pods(localfleet.SeedNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		versions["pod/"+p.Name] = p.ResourceVersion
	}
	return versions
}

func assertReady(t *testing.T, node corev1.Node) {
	t.Helper()
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status != corev1.ConditionTrue {
				t.Errorf("%s Ready=%s, want True", node.Name, c.Status)
			}
			return
		}
	}
	t.Errorf("%s has no Ready condition", node.Name)
}

func assertResources(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for name, w := range want {
		if g, ok := got[name]; !ok || g.Cmp(w) != 0 {
			t.Errorf("%s[%s]: got %s, want %s", what, name, g.String(), w.String())
		}
	}
}

func hasProgress(events []localfleet.Progress, component string, stage localfleet.Stage) bool {
	return slices.ContainsFunc(events, func(p localfleet.Progress) bool { return p.Component == component && p.Stage == stage })
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s", what, timeout)
		}
		<-ticker.C
	}
}
