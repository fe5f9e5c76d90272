package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// TestPartsRunAsSeparateProcesses runs the fleetflow binary once per part, as separate processes against
// one NATS server: the control-plane producer, the placer, the status writer, and per workload cluster
// its producer and its applier. A submitted job is placed, lands, and its verdict comes back.
func TestPartsRunAsSeparateProcesses(t *testing.T) {
	fleet := localfleettest.Fleet(t)
	ctx := t.Context()
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(t.TempDir(), "fleetflow")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/fleetflow")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fleetflow: %v\n%s", err, out)
	}

	controlPlane, err := kube.NewClients(fleet.ControlPlane.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	e2eenv.DeleteAll(t, controlPlane, pytorchJobKind)
	if err := app.InstallControlPlaneCRDs(ctx, controlPlane, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	crds := e2eenv.ReadObjects(t, "testdata/crds/pytorchjobs.yaml")
	spec := e2eenv.ReadFleetSpec(t, fleetFile)
	clusters := map[string]*kube.Clients{}
	for _, c := range fleet.Workloads {
		clients, err := kube.NewClients(c.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		clusters[c.Name] = clients
		e2eenv.DeleteAll(t, clients, pytorchJobKind)
		if err := clients.Apply(ctx, e2eenv.FieldManager, crds...); err != nil {
			t.Fatal(err)
		}
	}
	if err := controlPlane.Apply(ctx, e2eenv.FieldManager, crds...); err != nil {
		t.Fatal(err)
	}
	for _, c := range spec.Clusters {
		target, _ := fleet.Cluster(c.Name)
		kubeconfig, err := os.ReadFile(target.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.RegisterCluster(ctx, controlPlane, c.Name, kubeconfig, c.Labels, c.Taints, e2eenv.FieldManager); err != nil {
			t.Fatal(err)
		}
	}
	if err := controlPlane.Apply(ctx, e2eenv.FieldManager, e2eenv.ReadObjects(t, "testdata/policies/a-then-b.yaml")...); err != nil {
		t.Fatal(err)
	}

	// Each part connects as its own NATS user, from the seed file `fleetflow nats users --dir` would write; the
	// server accepts only them, as an external one configured with their authorization block does.
	var names []string
	for _, c := range spec.Clusters {
		names = append(names, c.Name)
	}
	usersDir := t.TempDir()
	users, err := natsauth.LoadOrGenerate(usersDir, names)
	if err != nil {
		t.Fatal(err)
	}
	server, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Users: users.ServerUsers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)
	url := server.ClientURL()
	// The admin provisions the streams, as fleetflow run does before its parts start: the parts' users may
	// only read their configuration.
	b, err := app.OpenBus(ctx, app.BusOptions{URL: url, Streams: streams.DefaultOptions(), Users: users}, "e2e", e2eenv.TestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// The control-plane parts find it as kubectl would with only $KUBECONFIG set: two files merged, the first's
	// current context a decoy no one answers at, --context picking the control plane's from the second.
	kubeconfigEnv, controlPlaneContext := mergedKubeconfig(t, fleet.ControlPlane.KubeconfigPath)
	logs := t.TempDir()
	// start runs a part as the NATS user named user.
	start := func(name, user string, args ...string) {
		log, err := os.Create(filepath.Join(logs, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(binary, append(args, "--nats-url", url, "--nats-nkey", natsauth.SeedFile(usersDir, user),
			"--data-dir", t.TempDir())...)
		cmd.Stdout, cmd.Stderr = log, log
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigEnv)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			_ = log.Close()
			if t.Failed() {
				data, _ := os.ReadFile(log.Name())
				t.Logf("%s log:\n%s", name, data)
			}
		})
	}
	start("producer", "producer", "producer", "--context", controlPlaneContext)
	placerHealth := freeAddress(t)
	start("placer", "placer", "placer", "--heartbeat-timeout", "6s", "--health-address", placerHealth)
	start("status", "status", "status", "--context", controlPlaneContext, "--heartbeat-timeout", "6s")
	expected := map[string]int{}
	applierHealth := map[string]string{}
	for _, c := range spec.Clusters {
		target, _ := fleet.Cluster(c.Name)
		start("producer-"+c.Name, natsauth.UserName(natsauth.ClusterProducer, c.Name), "producer", "--cluster", c.Name+"="+target.KubeconfigPath)
		applierHealth[c.Name] = freeAddress(t)
		start("applier-"+c.Name, natsauth.UserName(natsauth.Applier, c.Name), "applier", "--cluster", c.Name+"="+target.KubeconfigPath,
			"--health-address", applierHealth[c.Name])
		expected[c.Name] = len(c.AllNodes())
	}

	placeSmallJobOnClusterA(t, b, expected, controlPlane, clusters, "team-processes")

	// What an operator's probes and Prometheus read of the processes.
	if code, body := httpGet(t, placerHealth, "/readyz"); code != 200 || !strings.Contains(body, "[+]placer ok") ||
		!strings.Contains(body, "[+]nats-connected ok") {
		t.Errorf("the placer's /readyz answered %d:\n%s", code, body)
	}
	_, placerConsumer := streams.PlacerConsumer()
	wantMetrics := map[string][]string{
		placerHealth: {"fleetflow_placer_leader 1", `fleetflow_placer_verdicts_total{status="Placed"}`,
			`fleetflow_events_handled_total{consumer="` + placerConsumer.Durable + `",outcome="ok",type="` + schemas.TypeWorkloadChanged + `"}`,
			`fleetflow_consumer_pending_messages{consumer="` + placerConsumer.Durable + `"}`,
			"fleetflow_submit_to_placed_seconds_count 1", `fleetflow_cluster_allocatable{cluster="cluster-a",resource="cpu"}`,
			`fleetflow_cluster_free{cluster="cluster-a",resource="memory"}`},
		applierHealth["cluster-a"]: {`fleetflow_applier_operations_total{cluster="cluster-a",operation="Apply",outcome="ok"}`,
			`fleetflow_placed_to_applied_seconds_count{action="Apply",cluster="cluster-a"} 1`},
	}
	for addr, metrics := range wantMetrics {
		// The applier counts its write once it returns, a moment after the copy shows in the cluster.
		e2eenv.Eventually(t, e2eenv.Settle, addr+"/metrics with "+strings.Join(metrics, ", "), func() bool {
			code, body := httpGet(t, addr, "/metrics")
			for _, metric := range metrics {
				if code != 200 || !strings.Contains(body, metric) {
					return false
				}
			}
			return true
		})
	}
	// Each part did its work with its own user's rights alone.
	assertNoRefusal(t, logs, "permissions violation")
}

// placeSmallJobOnClusterA waits until the parts see the fleet (nodes of each cluster in expected), as an
// operator would before submitting work, then submits the small PyTorchJob in namespace and waits until the
// control plane shows it Placed on cluster-a and its copy is there. It returns the job.
func placeSmallJobOnClusterA(t *testing.T, b *app.Bus, expected map[string]int, controlPlane *kube.Clients,
	clusters map[string]*kube.Clients, namespace string) *unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), e2eenv.Settle)
	defer cancel()
	if err := app.WaitObserved(ctx, b, expected); err != nil {
		t.Fatal(err)
	}
	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace(namespace)
	if err := controlPlane.Apply(t.Context(), e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the job placed on cluster-a, its verdict on the control plane", func() bool {
		a := e2eenv.Get(t, controlPlane, pytorchJobKind, namespace, job.GetName()).GetAnnotations()
		return a[schemas.AnnotationPlacement] == string(schemas.VerdictPlaced) && a[schemas.AnnotationCluster] == "cluster-a" &&
			e2eenv.Get(t, clusters["cluster-a"], pytorchJobKind, namespace, job.GetName()) != nil
	})
	return job
}

// assertNoRefusal fails the test for each line of the part logs in dir that holds one of words (lower case),
// naming the part: each part did its work with its own rights alone.
func assertNoRefusal(t *testing.T, dir string, words ...string) {
	t.Helper()
	parts, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range parts {
		data, err := os.ReadFile(filepath.Join(dir, part.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			lower := strings.ToLower(line)
			for _, w := range words {
				if strings.Contains(lower, w) {
					t.Errorf("%s was refused: %s", part.Name(), strings.TrimSpace(line))
				}
			}
		}
	}
}

// mergedKubeconfig is a $KUBECONFIG of two files, a decoy whose current context reaches nothing and then the
// kubeconfig at path, and the name of path's current context, which only --context picks.
func mergedKubeconfig(t *testing.T, path string) (kubeconfigEnv, context string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decoy := clientcmdapi.NewConfig()
	decoy.Clusters["decoy"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	decoy.AuthInfos["decoy"] = &clientcmdapi.AuthInfo{Token: "decoy"}
	decoy.Contexts["decoy"] = &clientcmdapi.Context{Cluster: "decoy", AuthInfo: "decoy"}
	decoy.CurrentContext = "decoy"
	if cfg.CurrentContext == "" || cfg.CurrentContext == "decoy" {
		t.Fatalf("%s: current context %q, want one the decoy does not shadow", path, cfg.CurrentContext)
	}
	decoyPath := filepath.Join(t.TempDir(), "decoy.kubeconfig")
	if err := clientcmd.WriteToFile(*decoy, decoyPath); err != nil {
		t.Fatal(err)
	}
	return decoyPath + string(filepath.ListSeparator) + path, cfg.CurrentContext
}

// freeAddress is a local address no one listens on, for a process to serve on.
func freeAddress(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().String()
}

// httpGet answers a GET of path on addr, with its status code and body.
func httpGet(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatalf("GET %s%s: %v", addr, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
