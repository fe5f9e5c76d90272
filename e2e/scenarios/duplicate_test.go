package scenarios

import (
	"context"
	"maps"
	"os"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/kube"
)

var configMapKind = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// TestDuplicateReachesAClusterThatStartsToMatch: a Duplicate copy placed on the clusters its policy selects
// also reaches a cluster that starts to match later, without leaving the first. This is how a cluster that
// joins the fleet gets the frameworks that level 1 copied before it came.
//
// Worked out from fleets/shared-config.yaml: only cluster-a carries shared-config=yes at first, so the
// ConfigMap lands there alone; once cluster-b is labelled too, it lands there as well.
func TestDuplicateReachesAClusterThatStartsToMatch(t *testing.T) {
	e := newScenario(t, "testdata/fleets/shared-config.yaml", e2eenv.Options{
		PolicyFiles: []string{"testdata/policies/share-configmaps.yaml"}})
	const ns, name = "shared", "inference-defaults"
	config := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"fleetflow.io/propagate": "true"}},
		"data":     map[string]any{"maxBatch": "32"},
	}}
	submit(t, e, config)
	// Scenarios share the fleet: the copies go too, so no later placer or test finds them.
	t.Cleanup(func() {
		configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		for _, c := range append([]*kube.Clients{e.ControlPlane}, e.ClusterClients()...) {
			err := c.Dynamic.Resource(configMaps).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete ConfigMap %s/%s: %v", ns, name, err)
			}
		}
	})
	on := func(cluster string) bool { return e2eenv.Get(t, e.Clusters[cluster], configMapKind, ns, name) != nil }
	e2eenv.Eventually(t, e2eenv.Settle, "the ConfigMap on cluster-a", func() bool { return on("cluster-a") })
	if on("cluster-b") {
		t.Fatal("the ConfigMap reached cluster-b, which the policy does not select yet")
	}

	// The operator labels cluster-b: it is registered again with its labels plus shared-config=yes.
	labels := map[string]string{"shared-config": "yes"}
	for _, c := range e.Spec.Clusters {
		if c.Name == "cluster-b" {
			maps.Copy(labels, c.Labels)
		}
	}
	target, _ := e.Fleet.Cluster("cluster-b")
	kubeconfig, err := os.ReadFile(target.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.RegisterCluster(t.Context(), e.ControlPlane, "cluster-b", kubeconfig, labels, nil, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	e2eenv.Eventually(t, e2eenv.Settle, "the ConfigMap on cluster-b too", func() bool { return on("cluster-b") })
	if !on("cluster-a") {
		t.Error("the ConfigMap left cluster-a when it spread to cluster-b")
	}
}
