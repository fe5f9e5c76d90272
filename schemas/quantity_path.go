package schemas

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

var quantityType = reflect.TypeFor[resource.Quantity]()

// badQuantityPath finds, in a payload that failed to decode, the first quantity that does not parse, as
// "field.path: value: reason": the quantity's own error names neither. It returns "" when it finds none.
func badQuantityPath(data []byte, payload any) string {
	var doc any
	if json.Unmarshal(data, &doc) != nil {
		return ""
	}
	return findBadQuantity(doc, reflect.TypeOf(payload), "")
}

func findBadQuantity(value any, t reflect.Type, path string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		text, ok := value.(string)
		if !ok {
			if _, number := value.(float64); number || value == nil {
				return ""
			}
			return fmt.Sprintf("%s: %v is no quantity", path, value)
		}
		if _, err := resource.ParseQuantity(text); err != nil {
			return fmt.Sprintf("%s: %q is no quantity: %v", path, text, err)
		}
		return ""
	}
	switch t.Kind() {
	case reflect.Struct:
		fields, _ := value.(map[string]any)
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if field, ok := fields[name]; ok {
				if found := findBadQuantity(field, f.Type, joinFieldPath(path, name)); found != "" {
					return found
				}
			}
		}
	case reflect.Map:
		entries, _ := value.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(entries)) {
			if found := findBadQuantity(entries[k], t.Elem(), joinFieldPath(path, k)); found != "" {
				return found
			}
		}
	case reflect.Slice, reflect.Array:
		items, _ := value.([]any)
		for i, item := range items {
			if found := findBadQuantity(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); found != "" {
				return found
			}
		}
	}
	return ""
}

func joinFieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
