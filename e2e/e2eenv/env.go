package e2eenv

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/logbuf"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// FieldManager is the field manager of objects the tests apply themselves.
const FieldManager = "fleetflow-e2e"

// Settle bounds every wait of the e2e tests.
const Settle = 60 * time.Second

// Options shape one test's environment.
type Options struct {
	// FleetFile is the fleet description the package's TestMain seeded (its clusters are registered).
	FleetFile string
	// CRDFiles are framework CRDs installed on the control plane and on every workload cluster before the
	// pipeline starts; a test that copies CRDs by a Duplicate policy leaves this empty.
	CRDFiles []string
	// ControlPlaneCRDFiles and ControlPlaneCRDs are installed on the control plane only.
	ControlPlaneCRDFiles []string
	ControlPlaneCRDs     []*unstructured.Unstructured
	// PolicyFiles are SchedulePolicies applied before the pipeline starts.
	PolicyFiles []string
	// Placer tunes the placer. HeartbeatTimeout defaults to DefaultHeartbeatTimeout; failover tests set a
	// shorter one.
	Placer placer.PlacerConfig
	// NoPlacer starts everything but the placer, for tests that run (and kill) placers themselves.
	NoPlacer bool
	// CleanKinds are kinds whose objects earlier tests left behind are deleted, on the control plane and
	// every workload cluster, before the pipeline starts: a fresh pipeline would place them again and
	// they would take the capacity this test counts on.
	CleanKinds []schema.GroupVersionKind
	// ControlPlaneAs, when it names a user, is who the pipeline acts as on the control plane (the test keeps
	// its admin clients), so a test can check the rights a deployment grants fleetflow.
	ControlPlaneAs rest.ImpersonationConfig
	// ClusterAs, when it names a user, is who the kubeconfigs registered for the workload clusters act as.
	ClusterAs rest.ImpersonationConfig
	// NATSUsers has the embedded NATS server accept only the fleet's per-part users (natsauth), each part
	// working as its own; the test's Bus is their admin.
	NATSUsers bool
	// NATS, when set, is an external NATS server (or a cluster's comma-separated URLs) the pipeline uses instead
	// of a fresh embedded one, with its streams at StreamReplicas (1 when 0): fault tests run it on a
	// JetStream cluster they kill nodes of.
	NATS string
	// StreamReplicas is the streams' replication factor on NATS.
	StreamReplicas int
	// NATSAuth is how the pipeline reaches NATS (its TLS CA, for one): every part's connection uses it.
	NATSAuth bus.ClientAuth
}

// Env is one test's view of the fleet plus a running pipeline.
type Env struct {
	T            *testing.T
	Fleet        *localfleet.Fleet
	Spec         *fleetspec.Fleet
	ControlPlane *kube.Clients
	Clusters     map[string]*kube.Clients
	Bus          *app.Bus
	Logs         *logbuf.Buffer
	Log          *slog.Logger

	all  *app.AllInOne
	stop func() // stops the running pipeline and reports how it ended
}

// New connects to the package's fleet, installs fleetflow's CRDs and the given framework CRDs, registers
// the workload clusters and the given policies on the control plane, and starts the pipeline on a fresh
// embedded JetStream (or on opts.NATS). It returns once every cluster's nodes, APIs and heartbeat are in the streams.
// Everything it started stops when the test ends.
func New(t *testing.T, opts Options) *Env {
	t.Helper()
	fleet := localfleettest.Fleet(t)
	ctx := t.Context()
	e := &Env{T: t, Fleet: fleet, ControlPlane: ClientsFor(t, fleet.ControlPlane), Clusters: map[string]*kube.Clients{},
		Logs: &logbuf.Buffer{}}
	e.Log = slog.New(slog.NewTextHandler(e.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for _, c := range fleet.Workloads {
		e.Clusters[c.Name] = ClientsFor(t, c)
	}
	e.Spec = ReadFleetSpec(t, opts.FleetFile)
	for _, f := range opts.CRDFiles {
		crds := ReadObjects(t, f)
		for _, clients := range append([]*kube.Clients{e.ControlPlane}, e.ClusterClients()...) {
			if err := clients.Apply(ctx, FieldManager, crds...); err != nil {
				t.Fatalf("install %s: %v", f, err)
			}
		}
	}
	for _, f := range opts.ControlPlaneCRDFiles {
		if err := e.ControlPlane.Apply(ctx, FieldManager, ReadObjects(t, f)...); err != nil {
			t.Fatalf("install %s: %v", f, err)
		}
	}
	for _, crd := range opts.ControlPlaneCRDs {
		if err := e.ControlPlane.Apply(ctx, FieldManager, crd); err != nil {
			t.Fatalf("install %s: %v", crd.GetName(), err)
		}
	}
	if err := app.InstallControlPlaneCRDs(ctx, e.ControlPlane, FieldManager); err != nil {
		t.Fatal(err)
	}
	for _, c := range e.Spec.Clusters {
		target, _ := fleet.Cluster(c.Name)
		kubeconfig, err := os.ReadFile(target.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		if opts.ClusterAs.UserName != "" {
			kubeconfig = Impersonating(t, kubeconfig, opts.ClusterAs)
		}
		if err := app.RegisterCluster(ctx, e.ControlPlane, c.Name, kubeconfig, c.Labels, c.Taints, FieldManager); err != nil {
			t.Fatal(err)
		}
	}
	for _, gvk := range opts.CleanKinds {
		for _, clients := range append([]*kube.Clients{e.ControlPlane}, e.ClusterClients()...) {
			DeleteAll(t, clients, gvk)
		}
	}
	for _, f := range opts.PolicyFiles {
		if err := e.ControlPlane.Apply(ctx, FieldManager, ReadObjects(t, f)...); err != nil {
			t.Fatal(err)
		}
	}

	runCtx, cancel := context.WithCancel(context.Background())
	streamOpts := streams.DefaultOptions()
	if opts.StreamReplicas > 0 {
		streamOpts.Replicas = opts.StreamReplicas
	}
	busOpts := app.BusOptions{URL: opts.NATS, DataDir: t.TempDir(), Streams: streamOpts, Auth: opts.NATSAuth}
	if opts.NATSUsers {
		var names []string
		for _, c := range e.Spec.Clusters {
			names = append(names, c.Name)
		}
		users, err := natsauth.Generate(names)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		busOpts.Users = users
	}
	b, err := app.OpenBus(runCtx, busOpts, t.Name(), e.Log)
	if err != nil {
		cancel()
		t.Fatalf("open bus: %v", err)
	}
	e.Bus = b
	placer := opts.Placer
	if placer.HeartbeatTimeout == 0 {
		placer.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	controlPlane := e.ControlPlane
	if opts.ControlPlaneAs.UserName != "" {
		cfg := fleet.ControlPlane.RESTConfig()
		cfg.Impersonate = opts.ControlPlaneAs
		if controlPlane, err = kube.NewClients(cfg); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	e.all = &app.AllInOne{ControlPlane: controlPlane, Placer: placer, NoPlacer: opts.NoPlacer,
		SkippedNamespaces: app.DefaultSkipped()}
	e.start(runCtx)
	t.Cleanup(func() {
		e.stop()
		cancel()
		b.Close()
		if t.Failed() {
			t.Logf("pipeline log:\n%s", e.Logs.String())
		}
	})
	waitCtx, stop := context.WithTimeout(ctx, Settle)
	defer stop()
	if err := app.WaitObserved(waitCtx, b, e.ExpectedNodes()); err != nil {
		t.Fatal(err)
	}
	return e
}

// start runs the pipeline on e.Bus until ctx is done or e.stop is called.
func (e *Env) start(ctx context.Context) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.all.Run(runCtx, e.Bus, e.Log) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.T.Errorf("pipeline ended with %v", err)
			}
		})
	}
}

// StopPipeline stops every part of the pipeline, leaving the streams as they are.
func (e *Env) StopPipeline() { e.stop() }

// Restart stops every part of the pipeline, runs meanwhile while none runs, and starts them all again on the
// same streams, as a restarted fleetflow finds them.
func (e *Env) Restart(meanwhile func()) {
	e.T.Helper()
	e.stop()
	meanwhile()
	e.start(context.Background())
}

// Impersonating rewrites a kubeconfig so that every user in it acts as as.
func Impersonating(t *testing.T, kubeconfig []byte, as rest.ImpersonationConfig) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, user := range cfg.AuthInfos {
		user.Impersonate, user.ImpersonateUID, user.ImpersonateGroups = as.UserName, as.UID, as.Groups
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ServiceAccount is who a pod running as a service account acts as.
func ServiceAccount(namespace, name string) rest.ImpersonationConfig {
	return rest.ImpersonationConfig{UserName: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
}

// ExpectedNodes counts the fleet file's nodes per cluster.
func (e *Env) ExpectedNodes() map[string]int {
	out := map[string]int{}
	for _, c := range e.Spec.Clusters {
		out[c.Name] = len(c.AllNodes())
	}
	return out
}

// ClusterClients lists the workload clusters' clients.
func (e *Env) ClusterClients() []*kube.Clients {
	out := make([]*kube.Clients, 0, len(e.Clusters))
	for _, c := range e.Clusters {
		out = append(out, c)
	}
	return out
}

// Publish publishes an event as a producer would.
func (e *Env) Publish(t *testing.T, eventType, subject, id string, payload schemas.Payload) {
	t.Helper()
	event, err := codec.NewEvent(eventType, "/e2e", subject, id, payload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Bus.Publisher.Publish(t.Context(), subject, event); err != nil {
		t.Fatal(err)
	}
}

// ClientsFor builds clients for one cluster of the fleet.
func ClientsFor(t *testing.T, c *localfleet.Cluster) *kube.Clients {
	t.Helper()
	clients, err := kube.NewClients(c.RESTConfig())
	if err != nil {
		t.Fatalf("clients for %s: %v", c.Name, err)
	}
	return clients
}

// ClientsAs builds clients for one cluster of the fleet that act as as, to check what an identity may do.
func ClientsAs(t *testing.T, c *localfleet.Cluster, as rest.ImpersonationConfig) *kube.Clients {
	t.Helper()
	cfg := c.RESTConfig()
	cfg.Impersonate = as
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatalf("clients for %s as %s: %v", c.Name, as.UserName, err)
	}
	return clients
}

// ReadFleetSpec parses a fleet file.
func ReadFleetSpec(t *testing.T, path string) *fleetspec.Fleet {
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

// ReadObjects reads a multi-document YAML file.
func ReadObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return decodeObjects(t, data, path)
}

// ParseObjects reads multi-document YAML a test holds inline.
func ParseObjects(t *testing.T, yaml string) []*unstructured.Unstructured {
	t.Helper()
	return decodeObjects(t, []byte(yaml), t.Name())
}

func decodeObjects(t *testing.T, data []byte, source string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := kube.DecodeYAML(data, source)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// Get reads an object from a cluster; nil when it does not exist (or its kind is not served).
func Get(t *testing.T, c *kube.Clients, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	gvr, namespaced, err := c.ResourceFor(obj)
	if err != nil {
		return nil
	}
	client := c.Dynamic.Resource(gvr)
	var got *unstructured.Unstructured
	if namespaced {
		got, err = client.Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	} else {
		got, err = client.Get(context.Background(), name, metav1.GetOptions{})
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, namespace, name, err)
	}
	return got
}

// List reads every object of a kind in every namespace; none when the kind is not served.
func List(t *testing.T, c *kube.Clients, gvk schema.GroupVersionKind) []unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	gvr, _, err := c.ResourceFor(obj)
	if err != nil {
		return nil
	}
	list, err := c.Dynamic.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", gvk.Kind, err)
	}
	return list.Items
}

// Eventually polls cond until it holds, failing the test with what after the deadline.
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DefaultHeartbeatTimeout is the placer's heartbeat timeout in tests that do not fail clusters over: shorter
// than the product's 30s, yet long enough that apiservers slowed down by installing large CRDs on two cores
// do not look dead.
const DefaultHeartbeatTimeout = 15 * time.Second

// PlacerConfig is the placer configuration the e2e tests run with.
func PlacerConfig() placer.PlacerConfig {
	return placer.PlacerConfig{HeartbeatTimeout: DefaultHeartbeatTimeout}
}

// DeleteAll deletes every object of a kind in every namespace, if the kind is served.
func DeleteAll(t *testing.T, c *kube.Clients, gvk schema.GroupVersionKind) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	gvr, namespaced, err := c.ResourceFor(obj)
	if err != nil {
		return
	}
	list, err := c.Dynamic.Resource(gvr).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list %s: %v", gvk.Kind, err)
	}
	for _, item := range list.Items {
		client := c.Dynamic.Resource(gvr)
		if namespaced {
			err = client.Namespace(item.GetNamespace()).Delete(t.Context(), item.GetName(), metav1.DeleteOptions{})
		} else {
			err = client.Delete(t.Context(), item.GetName(), metav1.DeleteOptions{})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s/%s: %v", gvk.Kind, item.GetNamespace(), item.GetName(), err)
		}
	}
}

// TestLogger is a logger that writes into the test's log, for helpers a test runs outside an Env.
func TestLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// EventsAbout lists the events.k8s.io Events on the object of uid in namespace, oldest first.
func EventsAbout(t *testing.T, clients *kube.Clients, namespace string, uid types.UID) []eventsv1.Event {
	t.Helper()
	list, err := clients.Core.EventsV1().Events(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list Events in %s: %v", namespace, err)
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.UID == uid {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	return out
}

// ClusterDecisions counts the decisions the decisions stream holds on each decision subject (a workload and a
// cluster), leaving out the placers' leadership records.
func ClusterDecisions(t *testing.T, js jetstream.JetStream) map[string]uint64 {
	t.Helper()
	stream, err := js.Stream(t.Context(), schemas.StreamDecisions)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(t.Context(), jetstream.WithSubjectFilter(schemas.SubjectClusterDecisions))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}

// Total sums counts.
func Total(counts map[string]uint64) uint64 {
	var n uint64
	for _, c := range counts {
		n += c
	}
	return n
}
