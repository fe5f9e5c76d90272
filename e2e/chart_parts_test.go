package e2e

import (
	"context"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// partsValues render the fleetflow chart with one Deployment per part, for the test fleet's two clusters.
var partsValues = []string{"mode=parts", "nats.url=nats://nats.nats.svc:4222", "nats.usersSecret=fleetflow-nats-users",
	"clusters[0].name=cluster-a", "clusters[1].name=cluster-b", "ui.enabled=true"}

// partDeployment is what one Deployment of mode=parts must be.
type partDeployment struct {
	command string
	// seed is the NATS user whose seed is all the pod mounts of the users Secret.
	seed string
	// kubeconfig is the Secret of the only kubeconfig the pod mounts, "" for none.
	kubeconfig string
	// account is the pod's ServiceAccount; a pod without control-plane rights mounts no token.
	account  string
	apiToken bool
}

// TestChartPartsMountOnlyTheirOwn renders mode=parts and checks each Deployment: its command, the one NATS
// seed and the one kubeconfig it mounts, its ServiceAccount; and that the chart refuses values that cannot work.
func TestChartPartsMountOnlyTheirOwn(t *testing.T) {
	helm := localfleettest.RequireTool(t, "helm")
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(root, "deploy/chart/fleetflow")
	objs := renderChart(t, helm, chart, app.SystemNamespace, append(slices.Clone(partsValues), "nats.tlsSecret=nats-tls",
		"clusters[1].kubeconfigSecret=b-admin", "clusters[1].kubeconfigKey=config", "clusters[1].context=admin",
		"ui.tokenSecret=ui-token", "parts.applier.replicas=2")...)
	want := map[string]partDeployment{
		"fleetflow-producer":           {command: "producer", seed: "producer", account: "fleetflow-producer", apiToken: true},
		"fleetflow-placer":             {command: "placer", seed: "placer", account: "fleetflow-nats-only"},
		"fleetflow-status":             {command: "status", seed: "status", account: "fleetflow-status", apiToken: true},
		"fleetflow-producer-cluster-a": {command: "producer", seed: "cluster-producer-cluster-a", kubeconfig: "cluster-cluster-a-kubeconfig", account: "fleetflow-nats-only"},
		"fleetflow-applier-cluster-a":  {command: "applier", seed: "applier-cluster-a", kubeconfig: "cluster-cluster-a-kubeconfig", account: "fleetflow-nats-only"},
		"fleetflow-producer-cluster-b": {command: "producer", seed: "cluster-producer-cluster-b", kubeconfig: "b-admin", account: "fleetflow-nats-only"},
		"fleetflow-applier-cluster-b":  {command: "applier", seed: "applier-cluster-b", kubeconfig: "b-admin", account: "fleetflow-nats-only"},
		"fleetflow-ui":                 {command: "ui", seed: "ui", account: "fleetflow-nats-only"},
	}
	deployments := deploymentsOf(t, objs)
	if got := slices.Sorted(maps.Keys(deployments)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Fatalf("Deployments %v, want %v", got, slices.Sorted(maps.Keys(want)))
	}
	pdbs := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "PodDisruptionBudget" {
			pdbs[o.GetName()] = true
		}
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			pod := deployments[name].Spec.Template.Spec
			args := pod.Containers[0].Args
			if args[0] != w.command {
				t.Errorf("command %q, want %q", args[0], w.command)
			}
			if got := withPrefix(args, "--nats-nkey="); !slices.Equal(got, []string{"--nats-nkey=/etc/fleetflow/nats-user/" + w.seed + ".nk"}) {
				t.Errorf("NATS seed flags %v, want only %s's", got, w.seed)
			}
			if got := withPrefix(args, "--nats-tls-ca="); len(got) != 1 {
				t.Errorf("TLS CA flags %v, want one", got)
			}
			cluster := strings.TrimPrefix(strings.TrimPrefix(name, "fleetflow-producer-"), "fleetflow-applier-")
			wantCluster := []string(nil)
			if w.kubeconfig != "" {
				flag := "--cluster=" + cluster + "=/etc/fleetflow/kubeconfig/kubeconfig"
				if cluster == "cluster-b" {
					flag += "@admin"
				}
				wantCluster = []string{flag}
			}
			if got := withPrefix(args, "--cluster="); !slices.Equal(got, wantCluster) {
				t.Errorf("cluster flags %v, want %v", got, wantCluster)
			}
			secrets := map[string][]string{}
			for _, v := range pod.Volumes {
				if v.Secret == nil {
					continue
				}
				var keys []string
				for _, item := range v.Secret.Items {
					keys = append(keys, item.Key)
				}
				secrets[v.Secret.SecretName] = keys
			}
			wantSecrets := map[string][]string{"fleetflow-nats-users": {w.seed + ".nk"}, "nats-tls": nil}
			if w.kubeconfig != "" {
				key := "kubeconfig"
				if cluster == "cluster-b" {
					key = "config"
				}
				wantSecrets[w.kubeconfig] = []string{key}
			}
			if w.command == "ui" {
				wantSecrets["ui-token"] = nil
			}
			if !maps.EqualFunc(secrets, wantSecrets, slices.Equal) {
				t.Errorf("mounted Secrets (name: keys, none for all) %v, want %v", secrets, wantSecrets)
			}
			if pod.ServiceAccountName != w.account {
				t.Errorf("ServiceAccount %q, want %q", pod.ServiceAccountName, w.account)
			}
			if mounted := pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken; mounted != w.apiToken {
				t.Errorf("API token mounted: %v, want %v", mounted, w.apiToken)
			}
			replicas := *deployments[name].Spec.Replicas
			if pdbs[name] != (replicas > 1) {
				t.Errorf("%d replicas, PodDisruptionBudget %v", replicas, pdbs[name])
			}
		})
	}

	refused := map[string][]string{
		"mode=parts needs nats.url":              {"mode=parts"},
		`mode: "both": want all-in-one or parts`: {"mode=both"},
		`clusters: name "East"`:                  {"mode=parts", "nats.url=nats://n:4222", "clusters[0].name=East"},
		"clusters: east given twice":             {"mode=parts", "nats.url=nats://n:4222", "clusters[0].name=east", "clusters[1].name=east"},
		"parts.clusterProducer.heartbeat":        {"mode=parts", "nats.url=nats://n:4222", "parts.clusterProducer.heartbeat=5"},
	}
	for message, values := range refused {
		args := []string{"template", "fleetflow", chart}
		for _, v := range values {
			args = append(args, "--set", v)
		}
		out, err := exec.CommandContext(t.Context(), helm, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), message) {
			t.Errorf("helm template --set %s: %v, want refused with %q:\n%s", strings.Join(values, ","), err, message, out)
		}
	}
}

// TestChartPartsGrantWhatEachPartNeeds installs the chart's mode=parts on the control plane and runs the
// fleetflow binary once per Deployment it renders, with that Deployment's arguments and only what its pod
// would have: the Secrets' keys its volumes project, and the control plane as its ServiceAccount (none
// when it mounts no token). A job is placed, lands, its verdict and its cluster's Ready come back, the fleet
// view shows the cluster, and its deletion reaches the copy, with nothing forbidden on Kubernetes nor on
// NATS; and each ServiceAccount holds exactly the rights of its table.
func TestChartPartsGrantWhatEachPartNeeds(t *testing.T) {
	helm := localfleettest.RequireTool(t, "helm")
	fleet := localfleettest.Fleet(t)
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	binary := filepath.Join(t.TempDir(), "fleetflow")
	build := exec.CommandContext(ctx, "go", "build", "-o", binary, "./cmd/fleetflow")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build fleetflow: %v\n%s", err, out)
	}

	controlPlane := e2eenv.ClientsFor(t, fleet.ControlPlane)
	objs := renderChart(t, helm, filepath.Join(root, "deploy/chart/fleetflow"), app.SystemNamespace, partsValues...)
	installChart(t, controlPlane, objs)
	for _, c := range fleet.Workloads {
		installChart(t, e2eenv.ClientsFor(t, c), renderChart(t, helm, filepath.Join(root, "deploy/chart/fleetflow-workload-cluster"),
			agentNamespace, "serviceAccount.name=fleetflow", "token.create=false"))
	}
	checkPartRights(t, controlPlane)

	// What the operator does before installing: CRDs, Clusters with their kubeconfig Secrets (as the workload
	// chart's identity), the NATS users' Secret and a server that accepts only them.
	e2eenv.DeleteAll(t, controlPlane, pytorchJobKind)
	if err := app.InstallControlPlaneCRDs(ctx, controlPlane, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	crds := e2eenv.ReadObjects(t, "testdata/crds/pytorchjobs.yaml")
	if err := controlPlane.Apply(ctx, e2eenv.FieldManager, crds...); err != nil {
		t.Fatal(err)
	}
	clusters := map[string]*kube.Clients{}
	spec := e2eenv.ReadFleetSpec(t, fleetFile)
	var names []string
	expected := map[string]int{}
	for _, c := range spec.Clusters {
		target, _ := fleet.Cluster(c.Name)
		clusters[c.Name] = e2eenv.ClientsFor(t, target)
		e2eenv.DeleteAll(t, clusters[c.Name], pytorchJobKind)
		if err := clusters[c.Name].Apply(ctx, e2eenv.FieldManager, crds...); err != nil {
			t.Fatal(err)
		}
		kubeconfig, err := os.ReadFile(target.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		kubeconfig = e2eenv.Impersonating(t, kubeconfig, e2eenv.ServiceAccount(agentNamespace, "fleetflow"))
		if err := app.RegisterCluster(ctx, controlPlane, c.Name, kubeconfig, c.Labels, c.Taints, e2eenv.FieldManager); err != nil {
			t.Fatal(err)
		}
		names = append(names, c.Name)
		expected[c.Name] = len(c.AllNodes())
	}
	if err := controlPlane.Apply(ctx, e2eenv.FieldManager, e2eenv.ReadObjects(t, "testdata/policies/a-then-b.yaml")...); err != nil {
		t.Fatal(err)
	}
	usersDir := t.TempDir()
	users, err := natsauth.LoadOrGenerate(usersDir, names)
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{}
	for _, u := range users.All {
		seeds[u.Name+".nk"] = u.Seed
	}
	usersSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "fleetflow-nats-users", Namespace: app.SystemNamespace}, Data: seeds}
	if _, err := controlPlane.Core.CoreV1().Secrets(app.SystemNamespace).Create(ctx, usersSecret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = controlPlane.Core.CoreV1().Secrets(app.SystemNamespace).Delete(context.Background(), usersSecret.Name, metav1.DeleteOptions{})
	})
	server, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Users: users.ServerUsers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Shutdown)

	// The placer's user provisions the streams: the placer starts first, the others once it is ready (in a
	// cluster, they restart until then).
	logs := t.TempDir()
	deployments := deploymentsOf(t, objs)
	placerHealth := runPod(t, binary, controlPlane, fleet.ControlPlane.KubeconfigPath, server.ClientURL(), logs, deployments["fleetflow-placer"])
	e2eenv.Eventually(t, e2eenv.Settle, "the placer ready", func() bool {
		resp, err := http.Get("http://" + placerHealth + "/readyz") // refused until the process listens
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	served := map[string]string{}
	for name, d := range deployments {
		if name != "fleetflow-placer" {
			served[name] = runPod(t, binary, controlPlane, fleet.ControlPlane.KubeconfigPath, server.ClientURL(), logs, d)
		}
	}
	b, err := app.OpenBus(ctx, app.BusOptions{URL: server.ClientURL(), Streams: streams.DefaultOptions(), Users: users}, "e2e", e2eenv.TestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	job := placeSmallJobOnClusterA(t, b, expected, controlPlane, clusters, "team-chart-parts")
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a shown Ready", func() bool {
		return clusterReady(t, controlPlane, "cluster-a")
	})
	if err := controlPlane.Dynamic.Resource(schema.GroupVersionResource{Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"}).Namespace(job.GetNamespace()).Delete(ctx, job.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the copy deleted from cluster-a", func() bool {
		return e2eenv.Get(t, clusters["cluster-a"], pytorchJobKind, job.GetNamespace(), job.GetName()) == nil
	})
	// The fleet view, as its own read-only NATS user, shows the cluster.
	e2eenv.Eventually(t, e2eenv.Settle, "the fleet view showing cluster-a", func() bool {
		code, body := httpGet(t, served["fleetflow-ui"], "/")
		return code == http.StatusOK && strings.Contains(body, "cluster-a")
	})
	assertNoRefusal(t, logs, "forbidden", "permissions violation")
}

// partRight is one request and whether a part's ServiceAccount may make it.
type partRight struct {
	verb, group, resource, subresource, namespace string
	allowed                                       bool
}

// checkPartRights asks the control plane whether each part's ServiceAccount may make each request of its table.
func checkPartRights(t *testing.T, controlPlane *kube.Clients) {
	t.Helper()
	workloads := func(verb string, allowed bool) partRight {
		return partRight{verb: verb, group: "kubeflow.org", resource: "pytorchjobs", namespace: "team-a", allowed: allowed}
	}
	rights := map[string][]partRight{
		"fleetflow-producer": {
			{verb: "watch", group: "fleetflow.io", resource: "clusters", allowed: true},
			{verb: "list", group: "fleetflow.io", resource: "schedulepolicies", allowed: true},
			{verb: "watch", group: "optimization.nvidia.com", resource: "resourceinterfaces", allowed: true},
			{verb: "watch", resource: "namespaces", allowed: true},
			workloads("watch", true),
			workloads("patch", false),
			{verb: "update", group: "fleetflow.io", resource: "clusters", subresource: "status"},
			{verb: "create", group: "fleetflow.io", resource: "workloadplacements", namespace: "team-a"},
			{verb: "create", group: "events.k8s.io", resource: "events", namespace: "team-a"},
			{verb: "get", resource: "secrets", namespace: app.SystemNamespace},
		},
		"fleetflow-status": {
			{verb: "update", group: "fleetflow.io", resource: "clusters", subresource: "status", allowed: true},
			{verb: "update", group: "fleetflow.io", resource: "schedulepolicies", subresource: "status", allowed: true},
			{verb: "update", group: "optimization.nvidia.com", resource: "resourceinterfaces", subresource: "status", allowed: true},
			{verb: "delete", group: "fleetflow.io", resource: "workloadplacements", namespace: "team-a", allowed: true},
			{verb: "create", group: "events.k8s.io", resource: "events", namespace: "team-a", allowed: true},
			workloads("patch", true),
			{verb: "update", group: "kubeflow.org", resource: "pytorchjobs", subresource: "status", namespace: "team-a", allowed: true},
			{verb: "update", group: "fleetflow.io", resource: "clusters"},
			{verb: "create", group: "kubeflow.org", resource: "pytorchjobs", namespace: "team-a"},
			{verb: "get", resource: "secrets", namespace: app.SystemNamespace},
		},
		"fleetflow-nats-only": {
			{verb: "get", group: "fleetflow.io", resource: "clusters"},
			{verb: "list", resource: "namespaces"},
			workloads("get", false),
			{verb: "get", resource: "secrets", namespace: app.SystemNamespace},
		},
	}
	for account, table := range rights {
		as := e2eenv.ServiceAccount(app.SystemNamespace, account)
		for _, r := range table {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: as.UserName, Groups: as.Groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: r.verb, Group: r.group, Resource: r.resource,
					Subresource: r.subresource, Namespace: r.namespace}}}
			got, err := controlPlane.Core.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != r.allowed {
				t.Errorf("%s may %s %s.%s/%s in %q: %v, want %v", account, r.verb, r.resource, r.group, r.subresource, r.namespace,
					got.Status.Allowed, r.allowed)
			}
		}
	}
}

// runPod runs the fleetflow binary as a Deployment's pod would run: its arguments, the keys its Secret
// volumes project (read from the control plane) where it mounts them, an emptyDir for each other volume, and
// the control plane as its ServiceAccount when it mounts its token. The NATS URL becomes url; the address it
// serves on (health, or the ui's), a free one, is returned.
func runPod(t *testing.T, binary string, controlPlane *kube.Clients, controlPlaneKubeconfig, url, logs string, d *appsv1.Deployment) string {
	t.Helper()
	pod := d.Spec.Template.Spec
	container := pod.Containers[0]
	dirs := map[string]string{} // volume name: the folder standing for it
	for _, v := range pod.Volumes {
		dir := t.TempDir()
		dirs[v.Name] = dir
		if v.Secret == nil {
			continue
		}
		secret, err := controlPlane.Core.CoreV1().Secrets(d.Namespace).Get(t.Context(), v.Secret.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: volume %s: %v", d.Name, v.Name, err)
		}
		for _, item := range v.Secret.Items {
			data, ok := secret.Data[item.Key]
			if !ok {
				t.Fatalf("%s: volume %s: Secret %s has no key %s", d.Name, v.Name, secret.Name, item.Key)
			}
			if err := os.WriteFile(filepath.Join(dir, item.Path), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	serving := freeAddress(t)
	var args []string
	for _, arg := range container.Args {
		switch {
		case strings.HasPrefix(arg, "--nats-url="):
			arg = "--nats-url=" + url
		case strings.HasPrefix(arg, "--health-address="):
			arg = "--health-address=" + serving
		case strings.HasPrefix(arg, "--listen="): // the ui's, which has no health address
			arg = "--listen=" + serving
		}
		for _, m := range container.VolumeMounts {
			arg = strings.ReplaceAll(arg, m.MountPath, dirs[m.Name])
		}
		args = append(args, arg)
	}
	env := append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"))
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		data, err := os.ReadFile(controlPlaneKubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(path, e2eenv.Impersonating(t, data, e2eenv.ServiceAccount(d.Namespace, pod.ServiceAccountName)), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(os.Environ(), "KUBECONFIG="+path)
	}
	log, err := os.Create(filepath.Join(logs, d.Name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = log, log, env
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", d.Name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = log.Close()
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			t.Logf("%s %s log:\n%s", d.Name, strings.Join(args, " "), data)
		}
	})
	return serving
}

// deploymentsOf are the Deployments among rendered objects, by name.
func deploymentsOf(t *testing.T, objs []*unstructured.Unstructured) map[string]*appsv1.Deployment {
	t.Helper()
	out := map[string]*appsv1.Deployment{}
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
			t.Fatal(err)
		}
		out[d.Name] = &d
	}
	return out
}

// withPrefix are the arguments that start with prefix.
func withPrefix(args []string, prefix string) []string {
	var out []string
	for _, a := range args {
		if strings.HasPrefix(a, prefix) {
			out = append(out, a)
		}
	}
	return out
}
