package kube

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestEnsureNamespaceWithoutTheRightToReadNamespaces: a client whose role does not cover reading namespaces
// creates the namespace when it may, and otherwise leaves the answer to the object's own write, instead of
// failing every write into a namespace that exists; a client that may read and finds none, but may not create
// one, is told.
func TestEnsureNamespaceWithoutTheRightToReadNamespaces(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "team", nil)
	tests := []struct {
		name       string
		exists     bool
		mayRead    bool
		mayCreate  bool
		wantErr    bool
		wantExists bool
	}{
		{name: "may read, exists", exists: true, mayRead: true, wantExists: true},
		{name: "may read and create, missing", mayRead: true, mayCreate: true, wantExists: true},
		{name: "may read, missing, may not create", mayRead: true, wantErr: true},
		{name: "may not read, may create, missing", mayCreate: true, wantExists: true},
		{name: "may not read, may create, exists", exists: true, mayCreate: true, wantExists: true},
		{name: "may not read nor create, exists", exists: true, wantExists: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.exists {
				objects = append(objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
			}
			core := fake.NewClientset(objects...)
			refuse := func(verb string, allowed bool) {
				core.PrependReactor(verb, "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
					if allowed {
						return false, nil, nil
					}
					return true, nil, forbidden
				})
			}
			refuse("get", tt.mayRead)
			refuse("create", tt.mayCreate)
			err := (&Clients{Core: core}).EnsureNamespace(context.Background(), "team", "fleetflow", nil)
			if (err != nil) != tt.wantErr {
				t.Fatalf("EnsureNamespace error = %v, want error %v", err, tt.wantErr)
			}
			_, getErr := core.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "team")
			if exists := getErr == nil; exists != tt.wantExists {
				t.Errorf("namespace exists = %v afterwards, want %v", exists, tt.wantExists)
			}
		})
	}
}

// TestRelabelNeeded: a namespace is relabelled when it lacks one of the labels or has another value, or when it
// still carries a label the field manager applied before and no longer applies; labels others set, and the
// field manager's labels set by a plain update, never call for it.
func TestRelabelNeeded(t *testing.T) {
	applied := func(manager string, operation metav1.ManagedFieldsOperationType, keys ...string) metav1.ManagedFieldsEntry {
		raw := `{"f:metadata":{"f:labels":{`
		for i, k := range keys {
			if i > 0 {
				raw += ","
			}
			raw += `"f:` + k + `":{}`
		}
		raw += `}}}`
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: operation, FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(raw)}
	}
	tests := []struct {
		name     string
		labels   map[string]string
		managed  []metav1.ManagedFieldsEntry
		desired  map[string]string
		relabels bool
	}{
		{name: "carries them all", labels: map[string]string{"a": "1", "b": "2"}, desired: map[string]string{"a": "1"}},
		{name: "lacks one", labels: map[string]string{"a": "1"}, desired: map[string]string{"a": "1", "b": "2"}, relabels: true},
		{name: "another value", labels: map[string]string{"a": "0"}, desired: map[string]string{"a": "1"}, relabels: true},
		{name: "applied before, taken off since", labels: map[string]string{"a": "1", "b": "2"},
			managed: []metav1.ManagedFieldsEntry{applied("fleetflow", metav1.ManagedFieldsOperationApply, "a", "b")},
			desired: map[string]string{"a": "1"}, relabels: true},
		{name: "applied before by another manager", labels: map[string]string{"a": "1", "b": "2"},
			managed: []metav1.ManagedFieldsEntry{applied("someone", metav1.ManagedFieldsOperationApply, "b")},
			desired: map[string]string{"a": "1"}},
		{name: "set by an update of the same manager", labels: map[string]string{"a": "1", "b": "2"},
			managed: []metav1.ManagedFieldsEntry{applied("fleetflow", metav1.ManagedFieldsOperationUpdate, "b")},
			desired: map[string]string{"a": "1"}},
		{name: "applied before, already gone", labels: map[string]string{"a": "1"},
			managed: []metav1.ManagedFieldsEntry{applied("fleetflow", metav1.ManagedFieldsOperationApply, "a", "b")},
			desired: map[string]string{"a": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: tt.labels, ManagedFields: tt.managed}}
			if got := relabelNeeded(ns, "fleetflow", tt.desired); got != tt.relabels {
				t.Errorf("relabelNeeded = %v, want %v", got, tt.relabels)
			}
		})
	}
}

// TestEnsureLabeledNamespaceUnderEveryRole: the labelled variant keeps EnsureNamespace's answers for clients
// whose role lacks rights on namespaces (a missing one is created with the labels, through a plain create when
// the role may not patch; one the client may neither read nor create is left to the object's own write), and
// relabels an existing one only when mayRelabel says it is fleetflow's and the role may patch it.
func TestEnsureLabeledNamespaceUnderEveryRole(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "team", nil)
	labels := map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "app.kubernetes.io/managed-by": "fleetflow"}
	tests := []struct {
		name                         string
		exists, ours                 bool
		mayRead, mayCreate, mayPatch bool
		wantErr                      bool
		wantExists, wantLabels       bool
	}{
		{name: "all rights, missing", mayRead: true, mayCreate: true, mayPatch: true, wantExists: true, wantLabels: true},
		{name: "no patch, missing", mayRead: true, mayCreate: true, wantExists: true, wantLabels: true},
		{name: "may not read, may create, missing", mayCreate: true, wantExists: true, wantLabels: true},
		{name: "may not read nor write, exists", exists: true, wantExists: true},
		{name: "may read, missing, may not write", mayRead: true, wantErr: true},
		{name: "ours, exists, may patch", exists: true, ours: true, mayRead: true, mayPatch: true, wantExists: true, wantLabels: true},
		{name: "not ours, exists, may patch", exists: true, mayRead: true, mayPatch: true, wantExists: true},
		{name: "ours, exists, may not patch", exists: true, ours: true, mayRead: true, wantErr: true, wantExists: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objects []runtime.Object
			if tt.exists {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
				if tt.ours {
					ns.Labels = map[string]string{"app.kubernetes.io/managed-by": "fleetflow"}
				}
				objects = append(objects, ns)
			}
			core := fake.NewClientset(objects...)
			for verb, allowed := range map[string]bool{"get": tt.mayRead, "create": tt.mayCreate, "patch": tt.mayPatch} {
				core.PrependReactor(verb, "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
					if allowed {
						return false, nil, nil
					}
					return true, nil, forbidden
				})
			}
			ours := func(ns *corev1.Namespace) bool { return ns.Labels["app.kubernetes.io/managed-by"] == "fleetflow" }
			err := (&Clients{Core: core}).EnsureLabeledNamespace(context.Background(), "team", "fleetflow", labels, ours)
			if (err != nil) != tt.wantErr {
				t.Fatalf("EnsureLabeledNamespace error = %v, want error %v", err, tt.wantErr)
			}
			var relabel *RelabelError
			if tt.wantErr && errors.As(err, &relabel) != tt.exists {
				t.Errorf("error %v: a *RelabelError = %v, want it exactly for an existing namespace", err, !tt.exists)
			}
			got, getErr := core.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", "team")
			if exists := getErr == nil; exists != tt.wantExists {
				t.Fatalf("namespace exists = %v afterwards, want %v", exists, tt.wantExists)
			}
			if !tt.wantExists {
				return
			}
			labelled := got.(*corev1.Namespace).Labels["pod-security.kubernetes.io/enforce"] == "restricted"
			if labelled != tt.wantLabels {
				t.Errorf("namespace labels = %v, want the control plane's: %v", got.(*corev1.Namespace).Labels, tt.wantLabels)
			}
		})
	}
}
