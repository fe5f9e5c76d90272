package scenarios

import (
	"context"
	"os"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

const crdFile = "testdata/crds/pytorchjobs.yaml"

// The fleet is a control plane and two workload clusters; each scenario seeds the nodes it needs.
func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithClusters("cluster-a", "cluster-b")))
}

// newScenario gives a test the fleet of fleetFile and a running pipeline with the given policies. The
// scenarios share one fleet, so it first removes what earlier scenarios left on the control plane (their
// policies would govern this one's jobs, and a new placer would place their jobs again) and replaces the
// workload clusters' nodes with the fleet file's.
func newScenario(t *testing.T, fleetFile string, opts e2eenv.Options) *e2eenv.Env {
	t.Helper()
	fleet := localfleettest.Fleet(t)
	clearControlPlane(t, e2eenv.ClientsFor(t, fleet.ControlPlane))
	seedFleet(t, fleet, fleetFile)
	opts.FleetFile = fleetFile
	opts.CRDFiles = append(opts.CRDFiles, crdFile)
	return e2eenv.New(t, opts)
}

// clearControlPlane deletes every SchedulePolicy and PyTorchJob on the control plane.
func clearControlPlane(t *testing.T, cp *kube.Clients) {
	t.Helper()
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "fleetflow.io", Version: "v1alpha1", Kind: "SchedulePolicy"},
		PyTorchJobKind,
	} {
		probe := &unstructured.Unstructured{}
		probe.SetGroupVersionKind(gvk)
		gvr, namespaced, err := cp.ResourceFor(probe)
		if err != nil {
			continue // not installed yet: the first scenario
		}
		client := cp.Dynamic.Resource(gvr)
		list, err := client.List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("list %s: %v", gvk.Kind, err)
		}
		for _, obj := range list.Items {
			if namespaced {
				err = client.Namespace(obj.GetNamespace()).Delete(t.Context(), obj.GetName(), metav1.DeleteOptions{})
			} else {
				err = client.Delete(t.Context(), obj.GetName(), metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatalf("delete %s %s: %v", gvk.Kind, obj.GetName(), err)
			}
		}
	}
}

// seedFleet makes each workload cluster's nodes exactly those of the fleet file: nodes it does not list
// are deleted with the pod that carried their requested resources, the others are seeded.
func seedFleet(t *testing.T, fleet *localfleet.Fleet, fleetFile string) {
	t.Helper()
	ctx := t.Context()
	spec := e2eenv.ReadFleetSpec(t, fleetFile)
	if len(spec.Namespaces) > 0 {
		if err := localfleet.SeedNamespaces(ctx, fleet.ControlPlane.RESTConfig(), spec.Namespaces); err != nil {
			t.Fatal(err)
		}
	}
	zero := int64(0)
	for _, c := range spec.Clusters {
		target, ok := fleet.Cluster(c.Name)
		if !ok {
			t.Fatalf("%s names cluster %s, which the package's fleet does not have", fleetFile, c.Name)
		}
		clients := e2eenv.ClientsFor(t, target)
		var want []string
		for _, n := range c.AllNodes() {
			want = append(want, n.Name)
		}
		nodes, err := clients.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes.Items {
			if slices.Contains(want, n.Name) {
				continue
			}
			if err := clients.Core.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			err := clients.Core.CoreV1().Pods(localfleet.SeedNamespace).Delete(ctx, localfleet.SeedPodName(n.Name),
				metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		if err := localfleet.SeedNodes(ctx, target.RESTConfig(), c); err != nil {
			t.Fatal(err)
		}
	}
}

// submit applies objects to the control plane as a user would.
func submit(t *testing.T, e *e2eenv.Env, objs ...*unstructured.Unstructured) {
	t.Helper()
	if err := e.ControlPlane.Apply(context.Background(), e2eenv.FieldManager, objs...); err != nil {
		t.Fatal(err)
	}
}

// localfleetControlPlaneConfig is a fresh admin client configuration for the control plane.
func localfleetControlPlaneConfig(t *testing.T) *rest.Config {
	t.Helper()
	return localfleettest.Fleet(t).ControlPlane.RESTConfig()
}
