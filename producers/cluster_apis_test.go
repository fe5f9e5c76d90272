package producers_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	kubetesting "k8s.io/client-go/testing"

	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

func TestAPIStringRoundTrip(t *testing.T) {
	cases := []struct {
		gvk  schema.GroupVersionKind
		want string
	}{
		{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "v1/Pod"},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}, "kubeflow.org/v1/PyTorchJob"},
		{schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
			"leaderworkerset.x-k8s.io/v1/LeaderWorkerSet"},
	}
	for _, tc := range cases {
		if got := producers.APIString(tc.gvk); got != tc.want {
			t.Errorf("APIString(%v) = %q, want %q", tc.gvk, got, tc.want)
		}
		back, err := producers.ParseAPI(tc.want)
		if err != nil || back != tc.gvk {
			t.Errorf("ParseAPI(%q) = %v, %v; want %v", tc.want, back, err, tc.gvk)
		}
	}
	for _, bad := range []string{"", "Pod", "v1/", "/Pod", "a/b/c/Kind"} {
		if _, err := producers.ParseAPI(bad); err == nil {
			t.Errorf("ParseAPI(%q) accepted a malformed entry", bad)
		}
	}
	kinds := producers.KindsFromAPIs([]string{"ray.io/v1/RayCluster", "junk", "v1/Pod"})
	if len(kinds) != 2 || kinds[0].Kind != "RayCluster" || kinds[1].Kind != "Pod" {
		t.Errorf("KindsFromAPIs = %v, want RayCluster and Pod sorted by API string", kinds)
	}
}

// partialDiscovery answers like an apiserver whose aggregated API backends are down.
type partialDiscovery struct {
	*fakediscovery.FakeDiscovery
	lists  []*metav1.APIResourceList
	failed map[schema.GroupVersion]error
}

func (d partialDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	if len(d.failed) > 0 {
		return nil, d.lists, &discovery.ErrGroupDiscoveryFailed{Groups: d.failed}
	}
	return nil, d.lists, nil
}

func TestDiscoverAPIsToleratesFailedGroups(t *testing.T) {
	core := &metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods", Kind: "Pod"}, {Name: "pods/status", Kind: "Pod"}, {Name: "nodes", Kind: "Node"}}}
	metrics := &metav1.APIResourceList{GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "nodes", Kind: "NodeMetrics"}}}
	fake := &fakediscovery.FakeDiscovery{Fake: &kubetesting.Fake{}}

	apis, byGV, err := producers.DiscoverAPIs(partialDiscovery{FakeDiscovery: fake,
		lists: []*metav1.APIResourceList{core, metrics}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Subresources are not kinds; entries are sorted.
	want := []string{"metrics.k8s.io/v1beta1/NodeMetrics", "v1/Node", "v1/Pod"}
	if !slices.Equal(apis, want) {
		t.Fatalf("apis = %v, want %v", apis, want)
	}

	// The metrics backend goes down: its kinds are kept from the previous answer, not reported as gone.
	failed := map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("503")}
	apis, _, err = producers.DiscoverAPIs(partialDiscovery{FakeDiscovery: fake,
		lists: []*metav1.APIResourceList{core}, failed: failed}, byGV)
	if err != nil {
		t.Fatalf("partial discovery failure returned an error: %v", err)
	}
	if !slices.Equal(apis, want) {
		t.Errorf("apis during the outage = %v, want %v", apis, want)
	}
	// Without a previous answer there is nothing to keep.
	apis, _, _ = producers.DiscoverAPIs(partialDiscovery{FakeDiscovery: fake,
		lists: []*metav1.APIResourceList{core}, failed: failed}, nil)
	if !slices.Equal(apis, []string{"v1/Node", "v1/Pod"}) {
		t.Errorf("apis without history = %v", apis)
	}
}

const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.apis.producers.test
spec:
  group: apis.producers.test
  scope: Namespaced
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

func TestInstalledAPIsFollowCRDs(t *testing.T) {
	b := newBench(t)
	// Polling is slower than the test's deadline, so the updates below come from the CRD watch.
	b.start(func(p *producers.ClusterProducer) { p.APIsResync = time.Hour })
	subject := schemas.ClusterAPIsSubject(testCluster)
	const widget = "apis.producers.test/v1alpha1/Widget"
	apis := func() []string {
		e, ok := b.last(subject)
		if !ok {
			return nil
		}
		return e.payload.(*schemas.ClusterAPIs).APIs
	}
	eventually(t, "installed APIs at start", func() bool { return slices.Contains(apis(), "v1/Pod") })
	got := apis()
	if !slices.IsSorted(got) || !slices.Contains(got, "apps/v1/Deployment") || slices.Contains(got, widget) {
		t.Fatalf("installed APIs at start = %v: want sorted, with apps/v1/Deployment, without %s", got, widget)
	}

	applyYAML(t, b.clients, widgetCRD)
	eventually(t, widget+" installed", func() bool { return slices.Contains(apis(), widget) })

	crds := b.clients.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1",
		Resource: "customresourcedefinitions"})
	if err := crds.Delete(context.Background(), "widgets.apis.producers.test", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, widget+" uninstalled", func() bool { a := apis(); return len(a) > 0 && !slices.Contains(a, widget) })
}

// applyYAML applies manifests to the workload cluster and deletes them when the test ends.
func applyYAML(t *testing.T, clients *kube.Clients, manifests string) {
	t.Helper()
	objects, err := kube.DecodeYAML([]byte(manifests), t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if err := clients.Apply(context.Background(), "producers-test", objects...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range objects {
			gvr, namespaced, err := clients.ResourceFor(obj)
			if err != nil {
				continue
			}
			client := clients.Dynamic.Resource(gvr)
			if namespaced {
				err = client.Namespace(obj.GetNamespace()).Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
			} else {
				err = client.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{})
			}
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s %s: %v", obj.GetKind(), obj.GetName(), err)
				continue
			}
			// A CRD's deletion finishes after its objects are removed; a later test may create it again.
			if obj.GetKind() == "CustomResourceDefinition" {
				eventually(t, "CRD "+obj.GetName()+" deleted", func() bool {
					_, err := client.Get(context.Background(), obj.GetName(), metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				})
			}
		}
	})
}

// TestInstalledAPIsWaitForTheApiserverToBeReady: an apiserver starting up answers discovery before it serves its
// CRDs' kinds. Until its /readyz passes, the producer publishes no installed APIs, so the copies of those kinds
// are not taken for gone (and moved) while they still run. The test's transport plays the starting apiserver:
// /readyz fails and discovery leaves the Widget group out (localfleettest.Starting).
func TestInstalledAPIsWaitForTheApiserverToBeReady(t *testing.T) {
	b := newBench(t)
	applyYAML(t, b.clients, widgetCRD)
	const widget = "apis.producers.test/v1alpha1/Widget"
	cfg, starting := localfleettest.Starting(localfleettest.Fleet(t).Workloads[0].RESTConfig(), "apis.producers.test")
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, logs := b.start(func(p *producers.ClusterProducer) { p.Clients, p.APIsResync = clients, 300*time.Millisecond })
	subject := schemas.ClusterAPIsSubject(testCluster)
	apis := func() []string {
		if e, ok := b.last(subject); ok {
			return e.payload.(*schemas.ClusterAPIs).APIs
		}
		return nil
	}
	eventually(t, widget+" installed", func() bool { return slices.Contains(apis(), widget) })

	starting.Store(true)
	eventually(t, "a discovery refused while the apiserver starts", func() bool {
		return logs.Contains("the apiserver is not ready, so its discovery may lack kinds it serves")
	})
	if got := apis(); !slices.Contains(got, widget) {
		t.Errorf("installed APIs published while the apiserver started: %v, without %s", got, widget)
	}
}
