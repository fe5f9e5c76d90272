package karta

import "k8s.io/apimachinery/pkg/runtime/schema"

// gvkOf reads the GVK of an unstructured object.
func gvkOf(obj map[string]any) schema.GroupVersionKind {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{Kind: kind}
	}
	return gv.WithKind(kind)
}

// GVKOf reads the group, version and kind of an unstructured CR, to look its RI up.
func GVKOf(obj map[string]any) schema.GroupVersionKind { return gvkOf(obj) }
