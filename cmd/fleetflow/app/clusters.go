package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/consumers/applier"
	"github.com/fleetflow/fleetflow/deploy/crds"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/satoken"
	"github.com/fleetflow/fleetflow/schemas"
)

// SystemNamespace holds fleetflow's own objects on the control plane, such as cluster kubeconfig Secrets.
const SystemNamespace = "fleetflow-system"

// DefaultKubeconfigKey is the Secret key of a Cluster's kubeconfig when its spec names none.
const DefaultKubeconfigKey = "kubeconfig"

var clusterGVR = schema.GroupVersionResource{Group: "fleetflow.io", Version: "v1alpha1", Resource: "clusters"}

// InstallControlPlaneCRDs applies fleetflow's CRDs (Cluster, SchedulePolicy, ResourceInterface) to the
// control plane and waits until they are served.
func InstallControlPlaneCRDs(ctx context.Context, controlPlane *kube.Clients, fieldManager string) error {
	names, err := fs.Glob(crds.FS, "*.yaml")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		data, err := fs.ReadFile(crds.FS, name)
		if err != nil {
			return err
		}
		objs, err := kube.DecodeYAML(data, "deploy/crds/"+name)
		if err != nil {
			return err
		}
		if err := controlPlane.Apply(ctx, fieldManager, objs...); err != nil {
			return fmt.Errorf("install %s: %w", name, err)
		}
	}
	return nil
}

// RegisterCluster stores a workload cluster's kubeconfig in a Secret and creates or updates its Cluster
// object on the control plane, with labels and taints, by server-side apply as fieldManager: labels and
// taints others set on it stay.
func RegisterCluster(ctx context.Context, controlPlane *kube.Clients, name string, kubeconfig []byte, labels map[string]string,
	taints []corev1.Taint, fieldManager string) error {
	if _, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig); err != nil {
		return fmt.Errorf("cluster %s: kubeconfig: %w", name, err)
	}
	if err := controlPlane.EnsureNamespace(ctx, SystemNamespace, fieldManager, nil); err != nil {
		return err
	}
	secretName := "cluster-" + name + "-kubeconfig"
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": secretName, "namespace": SystemNamespace},
		"type":       "Opaque",
		"stringData": map[string]any{DefaultKubeconfigKey: string(kubeconfig)},
	}}
	labelMap := map[string]any{}
	for k, v := range labels {
		labelMap[k] = v
	}
	spec := map[string]any{"kubeconfigSecretRef": map[string]any{
		"name": secretName, "namespace": SystemNamespace, "key": DefaultKubeconfigKey,
	}}
	if len(taints) > 0 {
		list := make([]any, 0, len(taints))
		for _, t := range taints {
			taint := map[string]any{"key": t.Key, "effect": string(t.Effect)}
			if t.Value != "" {
				taint["value"] = t.Value
			}
			list = append(list, taint)
		}
		spec["taints"] = list
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "fleetflow.io/v1alpha1", "kind": "Cluster",
		"metadata": map[string]any{"name": name, "labels": labelMap},
		"spec":     spec,
	}}
	return controlPlane.Apply(ctx, fieldManager, secret, cluster)
}

// ClusterRunner runs everything fleetflow does for one workload cluster until ctx is done. Once retired is
// closed (the Cluster was deleted), it reports nothing more of the cluster (no heartbeat, APIs, nodes or
// statuses) and only carries out the decisions sent to it, the Deletes of the copies there, until ctx is done.
type ClusterRunner func(ctx context.Context, name string, clients *kube.Clients, retired <-chan struct{}) error

// DefaultClusterResync is how often a ClusterManager looks at every Cluster again.
const DefaultClusterResync = 15 * time.Second

// ClusterManager watches Cluster objects on the control plane and keeps one ClusterRunner per cluster
// running: it starts one for a new cluster, restarts it when an update of the Cluster finds a different
// kubeconfig, and retires it when the Cluster is deleted (see Drained). It also looks at every Cluster again each Resync,
// so a Cluster whose kubeconfig Secret was missing or wrong joins once the Secret is right (the Secret has
// no event of its own here: `kubectl apply -f dir/` creates cluster.yaml before secret.yaml), and a runner
// that stopped with an error is started again.
type ClusterManager struct {
	ControlPlane *kube.Clients
	Run          ClusterRunner
	Log          *slog.Logger
	// Resync defaults to DefaultClusterResync.
	Resync time.Duration
	// Drained, when set, reports whether a cluster's applier has carried out every decision published to it.
	// A deleted Cluster's runner is kept until then (within RetireTimeout), so the Deletes the placer sends
	// when the Cluster goes are carried out instead of leaving its copies running unseen.
	Drained func(ctx context.Context, cluster string) (bool, error)
	// RetireTimeout bounds that wait; it defaults to DefaultRetireTimeout.
	RetireTimeout time.Duration
	// Now is the clock that says when a kubeconfig's service-account token is due for renewal; time.Now when
	// nil.
	Now func() time.Time

	// reconcileMu runs one reconcile at a time.
	reconcileMu sync.Mutex
	mu          sync.Mutex
	running     map[string]*runningCluster
	// unreachable holds why each Cluster that cannot be run could not, so a resync logs it only when it changes.
	unreachable map[string]string
	// retiring marks the runners of deleted Clusters kept until their applier drained; a Cluster registered
	// again under the name meanwhile has its runner started again, to report the cluster again.
	retiring map[string]*struct{}
	// renewFailures holds why each Cluster's token could not be renewed, so a resync logs it only when it changes.
	renewFailures map[string]string
}

// DefaultRetireTimeout is how long a deleted Cluster's runner is kept at most for its applier to drain.
const DefaultRetireTimeout = 2 * time.Minute

// retireSettle is how long a deleted Cluster's runner is kept at least: the placer's Deletes for the
// cluster's copies are published within it, so an applier found idle before them is not taken as drained.
const retireSettle = 3 * time.Second

type runningCluster struct {
	kubeconfig string
	// identity is the apiserver's (identityOf), "" when unknown; created is when its Cluster was created.
	identity string
	created  time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	// retired is closed when the Cluster is deleted; isRetired says so under the manager's lock.
	retired   chan struct{}
	isRetired bool
}

// stopped reports whether the runner returned.
func (rc *runningCluster) stopped() bool {
	select {
	case <-rc.done:
		return true
	default:
		return false
	}
}

// Start watches Clusters until ctx is done, then stops every runner.
func (m *ClusterManager) Start(ctx context.Context) error {
	m.running, m.unreachable, m.retiring = map[string]*runningCluster{}, map[string]string{}, map[string]*struct{}{}
	m.renewFailures = map[string]string{}
	resync := m.Resync
	if resync <= 0 {
		resync = DefaultClusterResync
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(m.ControlPlane.Dynamic, resync)
	informer := factory.ForResource(clusterGVR).Informer()
	// The Clusters there at the start are run in the order they were registered, once all are listed: the
	// first of two Clusters of one apiserver keeps it (sameApiserver), and the second must not run meanwhile.
	var listed atomic.Bool
	sync := func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok && listed.Load() {
			m.reconcile(ctx, u)
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    sync,
		UpdateFunc: func(_, obj any) { sync(obj) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				// Marked at once, on the informer's goroutine, so an Add that follows (the Cluster registered
				// again) finds the runner retired and starts it again.
				token := m.markRetiring(u.GetName())
				go m.retire(ctx, u.GetName(), token)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch clusters: %w", err)
	}
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		informer.Run(ctx.Done())
	}()
	if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		listed.Store(true)
		var initial []*unstructured.Unstructured
		for _, obj := range informer.GetStore().List() {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				initial = append(initial, u)
			}
		}
		slices.SortFunc(initial, func(a, b *unstructured.Unstructured) int {
			return cmp.Or(a.GetCreationTimestamp().Compare(b.GetCreationTimestamp().Time), cmp.Compare(a.GetName(), b.GetName()))
		})
		for _, u := range initial {
			m.reconcile(ctx, u)
		}
	}
	<-ran
	m.mu.Lock()
	names := make([]string, 0, len(m.running))
	for name := range m.running {
		names = append(names, name)
	}
	m.mu.Unlock()
	for _, name := range names {
		m.stop(name)
	}
	return nil
}

func (m *ClusterManager) reconcile(ctx context.Context, cluster *unstructured.Unstructured) {
	// The informer's handler and the start's ordered pass both reconcile: two at once for one Cluster would
	// each start a runner, one of them never stopped.
	m.reconcileMu.Lock()
	defer m.reconcileMu.Unlock()
	name := cluster.GetName()
	log := m.Log.With("cluster", name)
	m.mu.Lock()
	delete(m.retiring, name) // registered again: its runner, if still kept, is its own again
	m.mu.Unlock()
	stored, err := m.kubeconfig(ctx, cluster)
	m.mu.Lock()
	current := m.running[name]
	retired := current != nil && current.isRetired
	m.mu.Unlock()
	// A kubeconfig that went missing or bad stops nothing: the runner keeps the last good one, so a typo in a
	// healthy cluster's Secret does not fail its workloads over.
	kept := ""
	if current != nil && !current.stopped() {
		kept = "; still working with the kubeconfig read before"
	}
	if err != nil {
		m.cannotRun(ctx, log, name, "KubeconfigUnavailable", "cannot reach cluster: kubeconfig unavailable", fmt.Errorf("%w%s", err, kept))
		return
	}
	kubeconfig := stored.data()
	cfg, err := restConfigOf(kubeconfig)
	if err != nil {
		m.cannotRun(ctx, log, name, "KubeconfigInvalid", "cannot reach cluster: kubeconfig is not usable",
			fmt.Errorf("%s: %w%s", secretKeyOf(cluster), err, kept))
		return
	}
	if renewed := m.renewToken(ctx, log, name, stored, cfg); renewed != nil {
		kubeconfig = renewed
		if cfg, err = restConfigOf(renewed); err != nil {
			m.cannotRun(ctx, log, name, "KubeconfigInvalid", "cannot reach cluster: kubeconfig is not usable",
				fmt.Errorf("%s, its token renewed: %w%s", secretKeyOf(cluster), err, kept))
			return
		}
	}
	joined := fmt.Sprintf("working with %s through the kubeconfig of %s", cfg.Host, secretKeyOf(cluster))
	if kept != "" && current.kubeconfig == string(kubeconfig) && !retired {
		// The same kubeconfig again (a Secret restored as it was): the runner goes on, and the Cluster no
		// longer shows the error it had.
		m.mu.Lock()
		_, failed := m.unreachable[name]
		delete(m.unreachable, name)
		m.mu.Unlock()
		if failed {
			m.setJoined(ctx, log, name, metav1.ConditionTrue, "RunnerStarted", joined)
		}
		return
	}
	cfg.QPS, cfg.Burst = 200, 400
	clients, err := kube.NewClients(cfg)
	if err != nil {
		m.cannotRun(ctx, log, name, "ClientError", "cannot reach cluster", fmt.Errorf("%s: %w%s", secretKeyOf(cluster), err, kept))
		return
	}
	identity := identityOf(ctx, clients)
	created := cluster.GetCreationTimestamp().Time
	owner, displaced := m.sameApiserver(name, identity, created)
	if owner != "" {
		m.cannotRun(ctx, log, name, "DuplicateCluster", "cannot run cluster", fmt.Errorf("its apiserver %s is Cluster %s's "+
			"(the same kube-system namespace, uid %s), which was registered first: one Cluster per cluster, or its "+
			"capacity counts twice and a Delete on one removes the other's copies", cfg.Host, owner, identity))
		if current != nil {
			m.stop(name)
		}
		return
	}
	for _, other := range displaced {
		m.stop(other)
		m.cannotRun(ctx, m.Log.With("cluster", other), other, "DuplicateCluster", "cannot run cluster",
			fmt.Errorf("its apiserver is Cluster %s's (the same kube-system namespace, uid %s), which was registered first",
				name, identity))
	}
	if current != nil {
		m.stop(name)
	}
	m.mu.Lock()
	delete(m.unreachable, name)
	m.mu.Unlock()
	runCtx, cancel := context.WithCancel(ctx)
	rc := &runningCluster{kubeconfig: string(kubeconfig), cancel: cancel, done: make(chan struct{}), identity: identity,
		created: created, retired: make(chan struct{})}
	m.mu.Lock()
	m.running[name] = rc
	m.mu.Unlock()
	log.Info("cluster joined", "server", cfg.Host)
	m.setJoined(ctx, log, name, metav1.ConditionTrue, "RunnerStarted", joined)
	go func() {
		defer close(rc.done)
		if err := m.Run(runCtx, name, clients, rc.retired); err != nil && runCtx.Err() == nil {
			m.mu.Lock()
			delete(m.unreachable, name) // each failure shown, though the last one said the same
			m.mu.Unlock()
			m.cannotRun(ctx, log, name, "RunnerFailed", "the cluster's producer and applier stopped", err)
		}
	}()
}

// sameApiserver looks for running Clusters whose apiserver is identity too. owner is the one registered before
// name (the earlier creation, then the smaller name), which keeps the cluster; displaced are those registered
// after it, whose runners give way to name's. Nothing is found when identity is unknown.
func (m *ClusterManager) sameApiserver(name, identity string, created time.Time) (owner string, displaced []string) {
	if identity == "" {
		return "", nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for other, rc := range m.running {
		if other == name || rc.identity != identity || rc.stopped() {
			continue
		}
		if rc.created.Before(created) || rc.created.Equal(created) && other < name {
			return other, nil
		}
		displaced = append(displaced, other)
	}
	return "", displaced
}

// identityTimeout bounds the read of an apiserver's identity: an unreachable one is run (and shown NotReady)
// rather than holding up the other Clusters.
const identityTimeout = 5 * time.Second

// identityOf tells one apiserver from another: the uid of its kube-system namespace, which every cluster has and
// no two share (clusters sharing one etcd keep it under different prefixes). "" when it cannot be read.
func identityOf(ctx context.Context, clients *kube.Clients) string {
	ctx, cancel := context.WithTimeout(ctx, identityTimeout)
	defer cancel()
	ns, err := clients.Core.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return string(ns.UID)
}

// cannotRun logs why a Cluster cannot be run, and shows it in the Cluster's Joined condition, once for each
// new reason.
func (m *ClusterManager) cannotRun(ctx context.Context, log *slog.Logger, name, reason, what string, err error) {
	message := what + ": " + err.Error()
	m.mu.Lock()
	seen := m.unreachable[name] == message
	m.unreachable[name] = message
	m.mu.Unlock()
	if !seen {
		log.Error(what+"; trying again at each resync", "error", err)
		m.setJoined(ctx, log, name, metav1.ConditionFalse, reason, message+"; tried again at each resync")
	}
}

// restConfigOf reads a kubeconfig, saying what is wrong with one that is not usable: client-go's own error for
// an empty or context-less one talks of KUBERNETES_MASTER, which a Cluster's Secret has nothing to do with.
func restConfigOf(kubeconfig []byte) (*rest.Config, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("does not parse: %w", err)
	}
	switch {
	case len(cfg.Clusters) == 0:
		return nil, errors.New("names no cluster")
	case cfg.CurrentContext == "":
		return nil, errors.New("has no current-context")
	case cfg.Contexts[cfg.CurrentContext] == nil:
		return nil, fmt.Errorf("current-context %q is not one of its contexts", cfg.CurrentContext)
	case cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster] == nil:
		return nil, fmt.Errorf("context %q names cluster %q, which it does not define", cfg.CurrentContext,
			cfg.Contexts[cfg.CurrentContext].Cluster)
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	return rc, nil
}

// secretKeyOf names where a Cluster's kubeconfig is read from, for messages.
func secretKeyOf(cluster *unstructured.Unstructured) string {
	ref, _, _ := unstructured.NestedStringMap(cluster.Object, "spec", "kubeconfigSecretRef")
	key := ref["key"]
	if key == "" {
		key = DefaultKubeconfigKey
	}
	return fmt.Sprintf("spec.kubeconfigSecretRef (Secret %s/%s, key %q)", ref["namespace"], ref["name"], key)
}

// setJoined writes the Cluster's Joined condition, leaving its other conditions (the status writer's Ready)
// and the rest of its status as they are. A failure is logged: the next change or resync writes it again.
func (m *ClusterManager) setJoined(ctx context.Context, log *slog.Logger, name string, status metav1.ConditionStatus, reason, message string) {
	if m.ControlPlane == nil {
		return
	}
	clusters := m.ControlPlane.Dynamic.Resource(clusterGVR)
	for range 5 {
		current, err := clusters.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			log.Warn("cannot show the Joined condition", "error", err)
			return
		}
		changed, err := kube.SetCondition(current, metav1.Condition{Type: v1alpha1.ClusterConditionJoined, Status: status,
			Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(time.Now().UTC().Truncate(time.Second))})
		if err != nil {
			log.Warn("cannot show the Joined condition", "error", err)
			return
		}
		if !changed {
			return // shown already
		}
		_, err = clusters.UpdateStatus(ctx, current, metav1.UpdateOptions{FieldManager: applier.FieldManager})
		switch {
		case apierrors.IsConflict(err):
			continue // the status writer wrote in between: read again
		case err != nil && !apierrors.IsNotFound(err):
			log.Warn("cannot show the Joined condition", "error", err)
		}
		return
	}
}

// markRetiring marks a deleted Cluster's runner as retiring and has it stop reporting the cluster at once: a
// heartbeat or APIs it published after the deletion would show a cluster that is gone, to the placer and in
// the state stream. It returns the token retire checks to know the Cluster was not registered again since.
func (m *ClusterManager) markRetiring(name string) *struct{} {
	token := &struct{}{}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.retiring[name] = token
	if rc := m.running[name]; rc != nil && !rc.isRetired {
		rc.isRetired = true
		close(rc.retired)
		m.Log.Info("Cluster deleted: its cluster is no longer reported; its applier goes on until it carried out the decisions sent to it",
			"cluster", name)
	}
	return token
}

// retire stops the runner of a deleted Cluster once its applier has carried out every decision published to
// it, or after RetireTimeout, unless the Cluster is registered again meanwhile.
func (m *ClusterManager) retire(ctx context.Context, name string, token *struct{}) {
	m.mu.Lock()
	_, running := m.running[name]
	m.mu.Unlock()
	log := m.Log.With("cluster", name)
	if running && m.Drained != nil {
		timeout := m.RetireTimeout
		if timeout <= 0 {
			timeout = DefaultRetireTimeout
		}
		start := time.Now()
		ticker := time.NewTicker(500 * time.Millisecond)
		defer ticker.Stop()
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return // Start stops every runner
			case <-ticker.C:
			}
			m.mu.Lock()
			still := m.retiring[name] == token
			m.mu.Unlock()
			if !still {
				return
			}
			elapsed := time.Since(start)
			if elapsed < retireSettle {
				continue
			}
			drained, err := m.Drained(ctx, name)
			switch {
			case err == nil && drained:
				waiting = false
			case elapsed > timeout:
				log.Warn("Cluster deleted before its applier carried out every decision sent to it; copies may remain there",
					"waited", timeout, "error", err)
				waiting = false
			}
		}
	}
	m.mu.Lock()
	still := m.retiring[name] == token
	if still {
		delete(m.retiring, name)
	}
	m.mu.Unlock()
	if still {
		m.stop(name)
	}
}

func (m *ClusterManager) stop(name string) {
	m.mu.Lock()
	rc := m.running[name]
	delete(m.running, name)
	delete(m.unreachable, name)
	m.mu.Unlock()
	if rc == nil {
		return
	}
	rc.cancel()
	<-rc.done
	m.Log.Info("cluster runner stopped", "cluster", name)
}

// storedKubeconfig is a Cluster's kubeconfig as its Secret holds it: the Secret as read, whose resourceVersion
// guards a renewal's write back, and the key the kubeconfig is under.
type storedKubeconfig struct {
	secret *corev1.Secret
	key    string
}

func (s storedKubeconfig) data() []byte { return s.secret.Data[s.key] }

// kubeconfig reads a Cluster's kubeconfig from the Secret its spec names.
func (m *ClusterManager) kubeconfig(ctx context.Context, cluster *unstructured.Unstructured) (storedKubeconfig, error) {
	ref, _, _ := unstructured.NestedStringMap(cluster.Object, "spec", "kubeconfigSecretRef")
	if ref["name"] == "" || ref["namespace"] == "" {
		return storedKubeconfig{}, fmt.Errorf("cluster %s: spec.kubeconfigSecretRef: name and namespace are required", cluster.GetName())
	}
	key := ref["key"]
	if key == "" {
		key = DefaultKubeconfigKey
	}
	secret, err := m.ControlPlane.Core.CoreV1().Secrets(ref["namespace"]).Get(ctx, ref["name"], metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return storedKubeconfig{}, fmt.Errorf("cluster %s: spec.kubeconfigSecretRef: Secret %s/%s not found", cluster.GetName(), ref["namespace"], ref["name"])
		}
		return storedKubeconfig{}, fmt.Errorf("cluster %s: read Secret %s/%s: %w", cluster.GetName(), ref["namespace"], ref["name"], err)
	}
	if _, ok := secret.Data[key]; !ok {
		return storedKubeconfig{}, fmt.Errorf("cluster %s: spec.kubeconfigSecretRef: Secret %s/%s has no key %q", cluster.GetName(),
			ref["namespace"], ref["name"], key)
	}
	return storedKubeconfig{secret: secret, key: key}, nil
}

// renewToken renews the service-account token of a Cluster's kubeconfig once it is due (satoken.Token.Due),
// stores the kubeconfig with the new token in the Cluster's Secret, and returns it; nil when there is nothing
// to renew (no expiring service-account token, or not due yet) or the renewal failed, which is logged once per
// reason: the runner works on with the current token, and a later resync tries again.
func (m *ClusterManager) renewToken(ctx context.Context, log *slog.Logger, name string, stored storedKubeconfig, cfg *rest.Config) []byte {
	raw, err := satoken.InKubeconfig(stored.data())
	if err != nil || raw == "" {
		return nil
	}
	token, ok := satoken.Parse(raw)
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	if !ok || !token.Due(now()) {
		return nil
	}
	renewed, err := m.renew(ctx, name, stored, cfg, token)
	m.mu.Lock()
	if m.renewFailures == nil {
		m.renewFailures = map[string]string{}
	}
	last := m.renewFailures[name]
	if err != nil {
		m.renewFailures[name] = err.Error()
	} else {
		delete(m.renewFailures, name)
	}
	m.mu.Unlock()
	if err != nil {
		if err.Error() != last {
			log.Warn("cannot renew the service-account token of the cluster's kubeconfig; working with the current one",
				"expires", token.Expires, "error", err)
		}
		return nil
	}
	return renewed
}

// renew asks the workload cluster for a new token and stores the kubeconfig carrying it in the Cluster's Secret.
func (m *ClusterManager) renew(ctx context.Context, name string, stored storedKubeconfig, cfg *rest.Config, token *satoken.Token) ([]byte, error) {
	core, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	renewed, err := satoken.Renew(ctx, core, token)
	if err != nil {
		return nil, err
	}
	updated, err := satoken.WithToken(stored.data(), renewed.Raw)
	if err != nil {
		return nil, err
	}
	secret := stored.secret.DeepCopy()
	secret.Data[stored.key] = updated
	// The Secret as read: a writer since (a user rotating it by hand) wins, and the next resync reads theirs.
	if _, err := m.ControlPlane.Core.CoreV1().Secrets(secret.Namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("store the renewed token in Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	m.Log.Info("renewed the service-account token of the cluster's kubeconfig", "cluster", name,
		"service_account", renewed.Namespace+"/"+renewed.Name, "expires", renewed.Expires)
	return updated, nil
}

// WaitObserved waits until the streams hold, for every named cluster, its installed APIs, a heartbeat and
// at least the given number of nodes: the placer then sees the fleet as it is, not half of it.
func WaitObserved(ctx context.Context, b *Bus, nodes map[string]int) error {
	stream, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		return err
	}
	for {
		missing := ""
		for cluster, want := range nodes {
			info, err := stream.Info(ctx, jetstream.WithSubjectFilter(schemas.SubjectEventsPrefix+".*."+schemas.Token(cluster)+".>"))
			if err != nil {
				return err
			}
			got := 0
			for subject := range info.State.Subjects {
				if strings.HasPrefix(subject, schemas.SubjectEventsPrefix+".node.") {
					got++
				}
			}
			_, apis := info.State.Subjects[schemas.ClusterAPIsSubject(cluster)]
			_, beat := info.State.Subjects[schemas.ClusterHeartbeatSubject(cluster)]
			if got < want || !apis || !beat {
				missing = fmt.Sprintf("cluster %s: %d/%d nodes, APIs %t, heartbeat %t", cluster, got, want, apis, beat)
				break
			}
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("fleet not observed in time (%s): %w", missing, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
