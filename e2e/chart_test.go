package e2e

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/schemas"
)

// agentNamespace is where the test installs the workload-cluster chart.
const agentNamespace = "fleetflow-agent"

// TestChartsGrantWhatFleetflowNeeds installs the Helm charts' rights, as `helm template` renders them, and
// runs the pipeline as their service accounts: on the control plane as the fleetflow chart's, and in each
// workload cluster as the fleetflow-workload-cluster chart's with its own narrow role instead of cluster-admin.
// A job is placed, its status comes back, the cluster shows Ready, and its deletion reaches the copy, with
// nothing forbidden on the way.
func TestChartsGrantWhatFleetflowNeeds(t *testing.T) {
	helm := localfleettest.RequireTool(t, "helm")
	fleet := localfleettest.Fleet(t)
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()

	controlPlane := e2eenv.ClientsFor(t, fleet.ControlPlane)
	installChart(t, controlPlane, renderChart(t, helm, filepath.Join(root, "deploy/chart/fleetflow"), app.SystemNamespace,
		"nats.url=nats://nats.nats.svc:4222"))
	for _, c := range fleet.Workloads {
		installChart(t, e2eenv.ClientsFor(t, c), renderChart(t, helm, filepath.Join(root, "deploy/chart/fleetflow-workload-cluster"),
			agentNamespace, "serviceAccount.name=fleetflow", "token.create=false"))
	}
	// Least privilege by default: neither identity reads a Secret outside what it needs.
	secretReads := map[string]*kube.Clients{
		"the control plane's identity reads a Secret of another namespace": e2eenv.ClientsAs(t, fleet.ControlPlane,
			e2eenv.ServiceAccount(app.SystemNamespace, "fleetflow")),
		"a workload cluster's identity reads a Secret": e2eenv.ClientsAs(t, fleet.Workloads[0],
			e2eenv.ServiceAccount(agentNamespace, "fleetflow")),
	}
	for what, clients := range secretReads {
		_, err := clients.Core.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: got %v, want Forbidden", what, err)
		}
	}

	opts := options()
	opts.ControlPlaneAs = e2eenv.ServiceAccount(app.SystemNamespace, "fleetflow")
	opts.ClusterAs = e2eenv.ServiceAccount(agentNamespace, "fleetflow")
	e := e2eenv.New(t, opts)

	job := e2eenv.ReadObjects(t, "testdata/workloads/pytorchjob-small.yaml")[0]
	job.SetNamespace("team-chart")
	if err := e.ControlPlane.Apply(ctx, e2eenv.FieldManager, job); err != nil {
		t.Fatal(err)
	}
	var placed *unstructured.Unstructured
	e2eenv.Eventually(t, e2eenv.Settle, "the job in cluster-a", func() bool {
		placed = e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-chart", job.GetName())
		return placed != nil
	})

	placed.Object["status"] = workerStatus(map[string]any{"active": int64(2)}, "Running")
	gvr, _, err := e.Clusters["cluster-a"].ResourceFor(placed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Clusters["cluster-a"].Dynamic.Resource(gvr).Namespace("team-chart").UpdateStatus(ctx, placed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the job's status and annotations on the control plane", func() bool {
		source := e2eenv.Get(t, e.ControlPlane, pytorchJobKind, "team-chart", job.GetName())
		active, _, _ := unstructured.NestedInt64(source.Object, "status", "replicaStatuses", "Worker", "active")
		a := source.GetAnnotations()
		return active == 2 && a[schemas.AnnotationCluster] == "cluster-a" && a[schemas.AnnotationPhase] == "Running"
	})
	e2eenv.Eventually(t, e2eenv.Settle, "cluster-a shown Ready", func() bool { return clusterReady(t, e.ControlPlane, "cluster-a") })

	if err := e.ControlPlane.Dynamic.Resource(gvr).Namespace("team-chart").Delete(ctx, job.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the copy deleted from cluster-a", func() bool {
		return e2eenv.Get(t, e.Clusters["cluster-a"], pytorchJobKind, "team-chart", job.GetName()) == nil
	})
	for line := range strings.Lines(e.Logs.String()) {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the charts' rights fell short: %s", strings.TrimSpace(line))
		}
	}
}

// renderChart runs `helm template` on a chart and parses what it renders.
func renderChart(t *testing.T, helm, chart, namespace string, values ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "fleetflow", chart, "--namespace", namespace}
	for _, v := range values {
		args = append(args, "--set", v)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), helm, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return e2eenv.ParseObjects(t, string(out))
}

// installChart applies rendered objects, creating their namespaces first. With no controller manager in the
// local fleet a Deployment starts no pods; the apiserver still validates it.
func installChart(t *testing.T, c *kube.Clients, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		if ns := o.GetNamespace(); ns != "" {
			if err := c.EnsureNamespace(t.Context(), ns, e2eenv.FieldManager, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := c.Apply(t.Context(), e2eenv.FieldManager, objs...); err != nil {
		t.Fatalf("install the chart's objects: %v", err)
	}
}

// clusterReady reports whether the control plane shows the Cluster name Ready.
func clusterReady(t *testing.T, controlPlane *kube.Clients, name string) bool {
	t.Helper()
	clusterKind := schema.GroupVersionKind{Group: "fleetflow.io", Version: "v1alpha1", Kind: "Cluster"}
	conditions, _, _ := unstructured.NestedSlice(e2eenv.Get(t, controlPlane, clusterKind, "", name).Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == "Ready" && c["status"] == "True" {
			return true
		}
	}
	return false
}
