package karta

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

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

// CheckTypeMeta reports a missing or malformed apiVersion or kind, by field name: without them no
// ResourceInterface can be looked up, and the lookup's own message ("no ResourceInterface for /, Kind=")
// would not say why.
func CheckTypeMeta(obj map[string]any) error {
	var problems []string
	apiVersion, err := typeMetaString(obj, "apiVersion")
	if err != nil {
		problems = append(problems, err.Error())
	} else if gv, err := schema.ParseGroupVersion(apiVersion); err != nil || gv.Version == "" {
		problems = append(problems, fmt.Sprintf("apiVersion %q: want VERSION or GROUP/VERSION", apiVersion))
	}
	if _, err := typeMetaString(obj, "kind"); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

func typeMetaString(obj map[string]any, field string) (string, error) {
	raw, present := obj[field]
	if !present || raw == nil || raw == "" {
		return "", fmt.Errorf("%s: required", field)
	}
	s, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string, got %T %v", field, raw, raw)
	}
	return s, nil
}
