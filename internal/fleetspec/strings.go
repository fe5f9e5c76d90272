package fleetspec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"
)

// CheckStrings reports, with their paths, the values that YAML 1.1 reads as booleans (n, y, no, yes, off, on,
// false, true, in any case) where target, the type the document decodes into, holds a string. Decoding
// would turn them into "false" or "true" without a word: a node named n into one named false, a label gpu: on
// into gpu=true, which no selector for "on" matches. It returns nil when there are none, or when the document
// does not parse (decoding reports that).
func CheckStrings(data []byte, target reflect.Type) error {
	converted, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil
	}
	var doc any
	if json.Unmarshal(converted, &doc) != nil {
		return nil
	}
	var v validator
	checkStrings(&v, doc, target, "")
	return v.err()
}

func checkStrings(v *validator, value any, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if b, ok := value.(bool); ok {
			v.add(path, fmt.Sprintf("want a string, got bool %t (quote it: YAML reads y, n, yes, no, on and off as booleans)", b))
		}
	case reflect.Struct:
		fields, ok := value.(map[string]any)
		if !ok {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "":
				checkStrings(v, value, f.Type, path) // inlined: its fields are this object's
			default:
				if name == "" {
					name = f.Name
				}
				if field, ok := fields[name]; ok {
					checkStrings(v, field, f.Type, joinPath(path, name))
				}
			}
		}
	case reflect.Map:
		entries, ok := value.(map[string]any)
		if !ok {
			return
		}
		for _, k := range sortedKeys(entries) {
			checkStrings(v, entries[k], t.Elem(), fmt.Sprintf("%s[%s]", path, k))
		}
	case reflect.Slice, reflect.Array:
		items, ok := value.([]any)
		if !ok {
			return
		}
		for i, item := range items {
			checkStrings(v, item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
