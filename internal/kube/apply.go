package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// DecodeYAML splits a multi-document YAML or JSON stream into objects; empty documents are skipped.
func DecodeYAML(data []byte, source string) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var obj map[string]any
		if err := decoder.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion, kind and metadata.name are required", source, i)
		}
		out = append(out, u)
	}
}

// ResourceFor resolves an object's kind to a namespaced or cluster-wide dynamic resource client.
func (c *Clients) ResourceFor(obj *unstructured.Unstructured) (schema.GroupVersionResource, bool, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && IsNoMatch(err) {
		c.RefreshMapper()
		mapping, err = c.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	return mapping.Resource, mapping.Scope.Name() == "namespace", nil
}

// Apply server-side applies objects in order with fieldManager. After a CustomResourceDefinition it waits
// until the new kind is served, so later objects of that kind in the same stream apply.
func (c *Clients) Apply(ctx context.Context, fieldManager string, objects ...*unstructured.Unstructured) error {
	for _, obj := range objects {
		gvr, namespaced, err := c.ResourceFor(obj)
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		client := c.Dynamic.Resource(gvr)
		var applied *unstructured.Unstructured
		if namespaced {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = metav1.NamespaceDefault
			}
			if err := c.EnsureNamespace(ctx, ns, fieldManager, nil); err != nil {
				return err
			}
			applied, err = client.Namespace(ns).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		} else {
			applied, err = client.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		}
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if obj.GetKind() == "CustomResourceDefinition" {
			if err := c.waitCRDServed(ctx, applied); err != nil {
				return err
			}
		}
	}
	return nil
}

// EnsureNamespace creates a namespace with labels if it does not exist; an existing one is left as it is.
// It reads first, since namespaces almost always exist and a read is cheaper than a refused create.
//
// A client that may not read namespaces (its role covers only the namespaces it writes to) tries to create
// it, and when it may not do that either, leaves the answer to the object's own write: a namespace that is
// not there makes that fail with NotFound.
func (c *Clients) EnsureNamespace(ctx context.Context, name, fieldManager string, labels map[string]string) error {
	namespaces := c.Core.CoreV1().Namespaces()
	_, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return nil
	}
	mayNotRead, err := missingOrUnreadable(name, err)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	_, err = namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: fieldManager})
	return createdOrLeft(name, mayNotRead, err)
}

// missingOrUnreadable sorts the error of reading namespace name: missing, or not readable by this client
// (mayNotRead), both of which call for creating it; any other error is returned.
func missingOrUnreadable(name string, err error) (mayNotRead bool, _ error) {
	if mayNotRead = apierrors.IsForbidden(err); !apierrors.IsNotFound(err) && !mayNotRead {
		return false, fmt.Errorf("read namespace %s: %w", name, err)
	}
	return mayNotRead, nil
}

// createdOrLeft is the outcome of creating namespace name: done, or there already, or left to the object's own
// write when the client may neither read nor create namespaces.
func createdOrLeft(name string, mayNotRead bool, err error) error {
	switch {
	case err == nil, apierrors.IsAlreadyExists(err), mayNotRead && apierrors.IsForbidden(err):
		return nil
	default:
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
}

// EnsureLabeledNamespace is EnsureNamespace for a namespace that should carry labels: it creates a missing one
// with them, and gives them to an existing one that mayRelabel says is fleetflow's to change, by server-side
// apply as fieldManager. Labels that fieldManager applied before and labels no longer has are taken off; labels
// others set stay. A namespace being deleted is left alone: the object's own write then says why it cannot go
// there. A client that may create namespaces but not patch them creates a missing one the plain way; one that
// may neither read nor create them leaves the answer to the object's own write, as EnsureNamespace does. An
// existing namespace whose labels could not be applied is a *RelabelError.
func (c *Clients) EnsureLabeledNamespace(ctx context.Context, name, fieldManager string, labels map[string]string,
	mayRelabel func(*corev1.Namespace) bool) error {
	namespaces := c.Core.CoreV1().Namespaces()
	existing, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	apply := func() error {
		_, err := namespaces.Apply(ctx, corev1ac.Namespace(name).WithLabels(labels),
			metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		return err
	}
	if err == nil {
		if existing.DeletionTimestamp != nil || !mayRelabel(existing) || !relabelNeeded(existing, fieldManager, labels) {
			return nil
		}
		if err := apply(); err != nil {
			return &RelabelError{Namespace: name, Labels: labels, Err: err}
		}
		return nil
	}
	mayNotRead, err := missingOrUnreadable(name, err)
	if err != nil {
		return err
	}
	if err = apply(); apierrors.IsForbidden(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		_, err = namespaces.Create(ctx, ns, metav1.CreateOptions{FieldManager: fieldManager})
	}
	return createdOrLeft(name, mayNotRead, err)
}

// RelabelError is an existing namespace whose labels could not be brought up to date: the namespace is there,
// so what goes into it can still be written.
type RelabelError struct {
	Namespace string
	Labels    map[string]string
	Err       error
}

func (e *RelabelError) Error() string {
	return fmt.Sprintf("apply the labels %v to namespace %s: %v", e.Labels, e.Namespace, e.Err)
}

func (e *RelabelError) Unwrap() error { return e.Err }

// relabelNeeded reports whether ns lacks one of labels, or carries a label fieldManager applied that labels no
// longer has.
func relabelNeeded(ns *corev1.Namespace, fieldManager string, labels map[string]string) bool {
	for k, v := range labels {
		if got, ok := ns.Labels[k]; !ok || got != v {
			return true
		}
	}
	for _, k := range appliedLabelKeys(ns, fieldManager) {
		if _, keep := labels[k]; !keep {
			if _, present := ns.Labels[k]; present {
				return true
			}
		}
	}
	return false
}

// appliedLabelKeys are the label keys fieldManager owns on obj through server-side apply, read from its managed
// fields ({"f:metadata":{"f:labels":{"f:KEY":{}}}}).
func appliedLabelKeys(ns *corev1.Namespace, fieldManager string) []string {
	var keys []string
	for _, entry := range ns.ManagedFields {
		if entry.Manager != fieldManager || entry.Operation != metav1.ManagedFieldsOperationApply || entry.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Metadata struct {
				Labels map[string]json.RawMessage `json:"f:labels"`
			} `json:"f:metadata"`
		}
		if json.Unmarshal(entry.FieldsV1.GetRawBytes(), &fields) != nil {
			continue
		}
		for k := range fields.Metadata.Labels {
			if key, ok := strings.CutPrefix(k, "f:"); ok {
				keys = append(keys, key)
			}
		}
	}
	return keys
}

func (c *Clients) waitCRDServed(ctx context.Context, crd *unstructured.Unstructured) error {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if len(versions) == 0 {
		return nil
	}
	first, _ := versions[0].(map[string]any)
	version, _ := first["name"].(string)
	gk := schema.GroupKind{Group: group, Kind: kind}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		c.Mapper.Reset()
		_, err := c.Mapper.RESTMapping(gk, version)
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("CRD %s: kind %s/%s not served after a minute: %w", crd.GetName(), group, kind, err)
	}
	return nil
}
