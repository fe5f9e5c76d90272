package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetflow/fleetflow/consumers/applier"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
)

// applierFixture drives an Applier of cluster-a directly with decisions built in the test, against the real
// apiserver. The applier has clients of its own, so its discovery is its own, as another replica's would be.
type applierFixture struct {
	t       *testing.T
	e       *e2eenv.Env
	applier *applier.Applier
	cluster *kube.Clients
	seq     uint64
	// namespaceLabels are what the next Applies say the control-plane namespace carries.
	namespaceLabels map[string]string
}

func newApplierFixture(t *testing.T) *applierFixture {
	t.Helper()
	e := newEnv(t)
	clients, err := kube.NewClients(e.Clusters["cluster-a"].Config)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.Clusters["cluster-a"].Core.CoreV1().ConfigMaps("team-applier").DeleteCollection(context.Background(),
			metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: schemas.LabelManagedBy + "=" + applier.FieldManager})
	})
	return &applierFixture{t: t, e: e, cluster: e.Clusters["cluster-a"],
		applier: &applier.Applier{Cluster: "cluster-a", Clients: clients, Publisher: e.Bus.Publisher, Log: e.Log}}
}

// decide hands the applier a decision about object on behalf of the control-plane workload uid, and returns
// what the applier's handler returned.
func (f *applierFixture) decide(action schemas.DecisionAction, object *unstructured.Unstructured, uid string) error {
	f.t.Helper()
	f.seq++
	subject, decided := f.decision(action, object, uid, f.seq)
	event, err := codec.NewEvent(schemas.TypePlacementDecided, "/e2e", subject, decided.DecisionID, decided)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.applier.Handle(f.t.Context(), bus.Delivery{Event: event, Payload: decided, Subject: subject,
		StreamSequence: f.seq, Attempt: 1})
}

// decision is a decision about object on behalf of the control-plane workload uid at seq, and its subject.
func (f *applierFixture) decision(action schemas.DecisionAction, object *unstructured.Unstructured, uid string,
	seq uint64) (string, *schemas.PlacementDecided) {
	ref := schemas.ObjectRef{APIVersion: object.GetAPIVersion(), Kind: object.GetKind(), Namespace: object.GetNamespace(),
		Name: object.GetName(), UID: uid}
	decided := &schemas.PlacementDecided{DecisionID: uid + "/" + strconv.FormatUint(seq, 10) + "/" + string(action),
		Workload: ref, Cluster: "cluster-a", Action: action, Sequence: seq, Epoch: "e2e"}
	if action == schemas.ActionApply {
		decided.Object, decided.NamespaceLabels = object.Object, f.namespaceLabels
	}
	return schemas.DecisionSubject("cluster-a", ref), decided
}

// get reads the copy of object from cluster-a, nil when there is none.
func (f *applierFixture) get(object *unstructured.Unstructured) *unstructured.Unstructured {
	f.t.Helper()
	return e2eenv.Get(f.t, f.cluster, object.GroupVersionKind(), object.GetNamespace(), object.GetName())
}

func configMap(namespace, name, owner string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace}, "data": map[string]any{"owner": owner}}}
}

// mustRetry fails the test unless err is an error the consume loop retries.
func mustRetry(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || bus.IsPermanent(err) {
		t.Fatalf("%s: error = %v, want one that is retried", what, err)
	}
}

// TestApplierWaitsUntilACopyBeingDeletedIsGone: an Apply that finds the copy of its name being deleted (a
// finalizer holds it after the Delete of an earlier workload of that name) is retried until the copy is gone,
// and then applies. Applying to the terminating copy would succeed and vanish with it.
func TestApplierWaitsUntilACopyBeingDeletedIsGone(t *testing.T) {
	f := newApplierFixture(t)
	ctx := t.Context()
	old, renewed := configMap("team-applier", "held", "uid-old"), configMap("team-applier", "held", "uid-new")
	if err := f.decide(schemas.ActionApply, old, "uid-old"); err != nil {
		t.Fatal(err)
	}
	// Act as an operator that holds its objects with a finalizer.
	configMaps := f.cluster.Core.CoreV1().ConfigMaps("team-applier")
	setFinalizers := func(finalizers []string) {
		t.Helper()
		cm, err := configMaps.Get(ctx, "held", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Finalizers = finalizers
		if _, err := configMaps.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setFinalizers([]string{"e2e.fleetflow.io/hold"})
	if err := f.decide(schemas.ActionDelete, old, "uid-old"); err != nil {
		t.Fatal(err)
	}
	mustRetry(t, "an Apply while the earlier copy is being deleted", f.decide(schemas.ActionApply, renewed, "uid-new"))
	if held := f.get(old); held == nil || held.GetLabels()[schemas.LabelWorkloadUID] != "uid-old" {
		t.Fatalf("the copy being deleted = %v, want the earlier workload's, untouched", held)
	}

	setFinalizers(nil)
	e2eenv.Eventually(t, e2eenv.Settle, "the earlier copy gone", func() bool { return f.get(old) == nil })
	if err := f.decide(schemas.ActionApply, renewed, "uid-new"); err != nil {
		t.Fatalf("the Apply once the earlier copy is gone: %v", err)
	}
	if copied := f.get(renewed); copied == nil || copied.GetLabels()[schemas.LabelWorkloadUID] != "uid-new" {
		t.Fatalf("copy after the retried Apply = %v, want the new workload's", copied)
	}
}

// TestApplierReplacesTheCopyOfAnEarlierWorkload: an Apply that finds the live copy of an earlier workload of
// the same name (its Delete waits for a retry, or was given up while the cluster was down) deletes that copy
// and applies once it is gone, instead of taking over its object and status; the earlier Delete, when it
// comes, leaves the new copy alone.
func TestApplierReplacesTheCopyOfAnEarlierWorkload(t *testing.T) {
	f := newApplierFixture(t)
	old, renewed := configMap("team-applier", "renamed", "uid-old"), configMap("team-applier", "renamed", "uid-new")
	if err := f.decide(schemas.ActionApply, old, "uid-old"); err != nil {
		t.Fatal(err)
	}
	earlier := f.get(old)
	mustRetry(t, "an Apply over the copy of an earlier workload", f.decide(schemas.ActionApply, renewed, "uid-new"))
	e2eenv.Eventually(t, e2eenv.Settle, "the earlier copy gone", func() bool { return f.get(old) == nil })
	if err := f.decide(schemas.ActionApply, renewed, "uid-new"); err != nil {
		t.Fatalf("the Apply once the earlier copy is gone: %v", err)
	}
	copied := f.get(renewed)
	if copied == nil || copied.GetLabels()[schemas.LabelWorkloadUID] != "uid-new" || copied.GetUID() == earlier.GetUID() {
		t.Fatalf("copy = %v, want a new object of the new workload", copied)
	}
	if err := f.decide(schemas.ActionDelete, old, "uid-old"); err != nil {
		t.Fatal(err)
	}
	if f.get(renewed) == nil {
		t.Fatal("the earlier workload's Delete removed the new workload's copy")
	}
}

// TestApplierRetriesAnApplyIntoATerminatingNamespace: a namespace being deleted refuses new objects with a
// Forbidden error that passes once it is gone (the next attempt creates it again), so the Apply is retried
// rather than given up. The local fleet runs no namespace controller, so the namespace stays terminating.
func TestApplierRetriesAnApplyIntoATerminatingNamespace(t *testing.T) {
	f := newApplierFixture(t)
	ctx := t.Context()
	namespaces := f.cluster.Core.CoreV1().Namespaces()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-terminating-" + strconv.FormatInt(time.Now().UnixNano(), 36)}}
	if _, err := namespaces.Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := namespaces.Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err := f.decide(schemas.ActionApply, configMap(ns.Name, "late", "uid-late"), "uid-late")
	if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		t.Fatalf("error = %v, want the apiserver's refusal for a terminating namespace", err)
	}
	mustRetry(t, "an Apply into a terminating namespace", err)
}

// TestApplierDeletesWhatItsDiscoveryMissed: a Delete whose kind the applier's discovery does not resolve
// looks again with fresh discovery, and in any version the cluster serves, before it concludes there is
// nothing to delete: another replica may have applied the copy after the kind was installed, or the cluster
// may have stopped serving the version the copy was applied in.
func TestApplierDeletesWhatItsDiscoveryMissed(t *testing.T) {
	tests := []struct {
		name string
		// stopServingV1 makes the cluster serve v2 only once the copy is there.
		stopServingV1 bool
	}{
		{name: "a kind installed after the applier's discovery"},
		{name: "a version no longer served", stopServingV1: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newApplierFixture(t)
			ctx := t.Context()
			plural := "widgets" + strconv.Itoa(i)
			// The applier's discovery, filled before the kind exists.
			if _, err := f.applier.Clients.Mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
				t.Fatal(err)
			}
			widget := f.widgetCopy(plural)
			if tt.stopServingV1 {
				if err := f.cluster.Apply(ctx, e2eenv.FieldManager, widgetCRD(plural, false)); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.decide(schemas.ActionDelete, widget, "uid-w"); err != nil {
				t.Fatal(err)
			}
			gvr := schema.GroupVersionResource{Group: "e2e.fleetflow.io", Version: "v2", Resource: plural}
			_, err := f.cluster.Dynamic.Resource(gvr).Namespace("team-applier").Get(ctx, "w", metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("the copy after its Delete: %v, want it gone", err)
			}
		})
	}
}

func kindOf(plural string) string { return "Widget" + plural[len("widgets"):] }

// widgetCopy installs the test kind of plural (widgetCRD, serving v1 too) and a copy of it, w in team-applier,
// as the applier leaves it for the workload uid-w; both go when the test ends.
func (f *applierFixture) widgetCopy(plural string) *unstructured.Unstructured {
	f.t.Helper()
	ctx := f.t.Context()
	crd := widgetCRD(plural, true)
	if err := f.cluster.Apply(ctx, e2eenv.FieldManager, crd); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		_ = f.cluster.Dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1",
			Resource: "customresourcedefinitions"}).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
	})
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.fleetflow.io/v1", "kind": kindOf(plural),
		"metadata": map[string]any{"name": "w", "namespace": "team-applier", "labels": map[string]any{
			schemas.LabelManagedBy: applier.FieldManager, schemas.LabelWorkloadUID: "uid-w"}}}}
	if err := f.cluster.EnsureNamespace(ctx, "team-applier", e2eenv.FieldManager, nil); err != nil {
		f.t.Fatal(err)
	}
	if err := f.cluster.Apply(ctx, e2eenv.FieldManager, widget); err != nil {
		f.t.Fatal(err)
	}
	return widget
}

// widgetCRD is a namespaced test kind served in v2 and, while servingV1, v1; stored as v2, listed first so
// kube.Clients.Apply waits for a version that is served.
func widgetCRD(plural string, servingV1 bool) *unstructured.Unstructured {
	version := func(name string, served, storage bool) map[string]any {
		return map[string]any{"name": name, "served": served, "storage": storage, "schema": map[string]any{
			"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + ".e2e.fleetflow.io"},
		"spec": map[string]any{"group": "e2e.fleetflow.io", "scope": "Namespaced",
			"names": map[string]any{"plural": plural, "singular": "widget" + plural[len("widgets"):], "kind": kindOf(plural),
				"listKind": kindOf(plural) + "List"},
			"versions": []any{version("v2", true, true), version("v1", servingV1, false)}},
	}}
}

// TestApplierTakesBackItsCopyThatLostItsManagedByLabel: a copy someone removed fleetflow's managed-by label
// from still carries the workload's UID label, so the next Apply puts the label back instead of refusing it
// as someone else's object (which gave the running job up and started it elsewhere). An object of that name
// that is neither is still refused.
func TestApplierTakesBackItsCopyThatLostItsManagedByLabel(t *testing.T) {
	f := newApplierFixture(t)
	cm := configMap("team-applier", "unlabelled", "uid-own")
	if err := f.decide(schemas.ActionApply, cm, "uid-own"); err != nil {
		t.Fatal(err)
	}
	copied := f.get(cm)
	labels := copied.GetLabels()
	delete(labels, schemas.LabelManagedBy)
	copied.SetLabels(labels)
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := f.cluster.Dynamic.Resource(gvr).Namespace("team-applier").Update(t.Context(), copied, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.decide(schemas.ActionApply, cm, "uid-own"); err != nil {
		t.Fatalf("the Apply over its own unlabelled copy: %v", err)
	}
	if got := f.get(cm).GetLabels()[schemas.LabelManagedBy]; got != applier.FieldManager {
		t.Errorf("managed-by label = %q after the Apply, want it back", got)
	}

	foreign := configMap("team-applier", "foreign", "")
	if _, err := f.cluster.Dynamic.Resource(gvr).Namespace("team-applier").Create(t.Context(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = f.cluster.Dynamic.Resource(gvr).Namespace("team-applier").Delete(context.Background(), "foreign", metav1.DeleteOptions{})
	})
	if err := f.decide(schemas.ActionApply, configMap("team-applier", "foreign", "x"), "uid-other"); err == nil || !bus.IsPermanent(err) {
		t.Errorf("an Apply over an object fleetflow never made: error = %v, want a permanent refusal", err)
	}
}

// TestApplierGivesNamespacesTheControlPlaneLabels: the namespace an applier creates for a copy carries the
// control-plane namespace's labels (a Pod Security level enforced there is enforced in the workload cluster
// too), and follows them when they change: a label taken off there goes, a label someone added in the
// workload cluster stays. A namespace fleetflow did not create is not relabelled.
func TestApplierGivesNamespacesTheControlPlaneLabels(t *testing.T) {
	f := newApplierFixture(t)
	ctx := t.Context()
	namespaces := f.cluster.Core.CoreV1().Namespaces()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	created, foreign := "team-labels-"+suffix, "team-own-"+suffix
	labelsOf := func(name string) map[string]string {
		t.Helper()
		ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ns.Labels
	}
	const enforce, mesh = "pod-security.kubernetes.io/enforce", "istio-injection"

	f.namespaceLabels = map[string]string{enforce: "restricted", mesh: "enabled"}
	if err := f.decide(schemas.ActionApply, configMap(created, "first", "uid-first"), "uid-first"); err != nil {
		t.Fatal(err)
	}
	got := labelsOf(created)
	if got[enforce] != "restricted" || got[mesh] != "enabled" || got[schemas.LabelManagedBy] != applier.FieldManager {
		t.Fatalf("created namespace labels = %v, want the control plane's and fleetflow's mark", got)
	}
	ns, err := namespaces.Get(ctx, created, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns.Labels["team"] = "added-in-the-cluster"
	if _, err := namespaces.Update(ctx, ns, metav1.UpdateOptions{FieldManager: "someone"}); err != nil {
		t.Fatal(err)
	}

	f.namespaceLabels = map[string]string{enforce: "baseline"}
	if err := f.decide(schemas.ActionApply, configMap(created, "second", "uid-second"), "uid-second"); err != nil {
		t.Fatal(err)
	}
	got = labelsOf(created)
	if _, stays := got[mesh]; stays || got[enforce] != "baseline" || got["team"] != "added-in-the-cluster" ||
		got[schemas.LabelManagedBy] != applier.FieldManager {
		t.Errorf("namespace labels = %v after the control plane's changed, want %s=baseline, no %s, the cluster's own "+
			"team label and fleetflow's mark", got, enforce, mesh)
	}

	if _, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: foreign}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.decide(schemas.ActionApply, configMap(foreign, "third", "uid-third"), "uid-third"); err != nil {
		t.Fatal(err)
	}
	if got := labelsOf(foreign); got[enforce] != "" || got[schemas.LabelManagedBy] != "" {
		t.Errorf("labels of a namespace fleetflow did not create = %v, want them left alone", got)
	}
}

// TestApplierRetriesADeleteWhileItsApiserverStarts: an apiserver starting up does not serve its CRDs' kinds yet,
// though their objects are stored. A Delete of such a kind then fails to be retried, rather than concluding
// there is nothing to delete and leaving the copy to run beside the one the workload moved to; once the
// apiserver is ready it deletes the copy.
func TestApplierRetriesADeleteWhileItsApiserverStarts(t *testing.T) {
	f := newApplierFixture(t)
	ctx := t.Context()
	const plural = "widgets9"
	widget := f.widgetCopy(plural)
	cfg, starting := localfleettest.Starting(f.applier.Clients.Config, "e2e.fleetflow.io")
	clients, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.applier.Clients = clients
	gvr := schema.GroupVersionResource{Group: "e2e.fleetflow.io", Version: "v2", Resource: plural}

	starting.Store(true)
	mustRetry(t, "a Delete of a kind the starting apiserver does not serve yet", f.decide(schemas.ActionDelete, widget, "uid-w"))
	if _, err := f.cluster.Dynamic.Resource(gvr).Namespace("team-applier").Get(ctx, "w", metav1.GetOptions{}); err != nil {
		t.Fatalf("the copy after the refused Delete: %v, want it still there", err)
	}

	starting.Store(false)
	if err := f.decide(schemas.ActionDelete, widget, "uid-w"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cluster.Dynamic.Resource(gvr).Namespace("team-applier").Get(ctx, "w", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the copy after its Delete: %v, want it gone", err)
	}
}

// TestApplierCarriesOutADecisionThatCameWhileItApplied: replicas of an applier share its consumer, so the
// newer decision for a workload may be carried out by one replica while another still carries out an older
// one (it found no newer decision in the stream before it wrote). The Delete of a deleted workload then found
// nothing to delete, and the late Apply left the copy running for good; a newer Apply was overwritten with
// the older content, or deleted by a late Delete. The applier carries out the decision that came meanwhile.
func TestApplierCarriesOutADecisionThatCameWhileItApplied(t *testing.T) {
	f := newApplierFixture(t)
	tests := []struct {
		name      string
		older     schemas.DecisionAction // the decision handled late
		newer     schemas.DecisionAction // the decision stored while it ran; "" for none
		wantOwner string                 // the copy's data.owner afterwards; "" for no copy
		// recreated: the newer decision is of a workload created again under the name (another uid), so the
		// copy of the older one goes and a new one comes.
		recreated bool
	}{
		{name: "nothing newer", older: schemas.ActionApply, wantOwner: "v1"},
		{name: "a Delete carried out before the Apply landed", older: schemas.ActionApply, newer: schemas.ActionDelete},
		{name: "a newer Apply carried out before the older landed", older: schemas.ActionApply, newer: schemas.ActionApply,
			wantOwner: "v2"},
		{name: "a newer Apply carried out before a Delete landed", older: schemas.ActionDelete, newer: schemas.ActionApply,
			wantOwner: "v2"},
		{name: "an Apply of a workload created again under the name before the Delete landed", older: schemas.ActionDelete,
			newer: schemas.ActionApply, wantOwner: "v2", recreated: true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "raced-" + strconv.Itoa(i)
			older, newer := configMap("team-applier", name, "v1"), configMap("team-applier", name, "v2")
			if tt.older == schemas.ActionDelete {
				if err := f.decide(schemas.ActionApply, older, "uid-"+name); err != nil {
					t.Fatal(err)
				}
			}
			var copyUID types.UID
			if copied := f.get(older); copied != nil {
				copyUID = copied.GetUID()
			}
			var latest *schemas.PlacementDecided
			if tt.newer != "" {
				newerUID := "uid-" + name
				if tt.recreated {
					newerUID += "-again"
				}
				_, latest = f.decision(tt.newer, newer, newerUID, f.seq+2)
			}
			f.applier.Superseded = func(context.Context, string, uint64) (bool, error) { return false, nil }
			f.applier.Latest = func(context.Context, string) (*schemas.PlacementDecided, uint64, error) {
				if latest == nil {
					return nil, 0, nil
				}
				return latest, latest.Sequence, nil
			}
			t.Cleanup(func() { f.applier.Superseded, f.applier.Latest = nil, nil })
			if err := f.decide(tt.older, older, "uid-"+name); err != nil {
				t.Fatal(err)
			}
			copied := f.get(older)
			switch {
			case tt.wantOwner == "" && copied != nil:
				t.Errorf("copy left: %v", copied.Object["data"])
			case tt.wantOwner != "" && copied == nil:
				t.Errorf("no copy, want one with owner %s", tt.wantOwner)
			case tt.wantOwner != "":
				if owner, _, _ := unstructured.NestedString(copied.Object, "data", "owner"); owner != tt.wantOwner {
					t.Errorf("copy's owner = %s, want %s", owner, tt.wantOwner)
				}
				// A Delete that a newer Apply of the same workload overtook is not carried out: deleted and
				// applied again, a running job would start over.
				if recreatedCopy := copied.GetUID() != copyUID; copyUID != "" && recreatedCopy != tt.recreated {
					t.Errorf("copy recreated = %t (uid %s, was %s), want %t", recreatedCopy, copied.GetUID(), copyUID, tt.recreated)
				}
			}
		})
	}
}
