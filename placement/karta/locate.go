package karta

import (
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// maxFieldMatches bounds the places a scalar is looked for: past it the value is too common to tell which one a
// path read.
const maxFieldMatches = 16

// fieldOf finds where in obj sits the value v that one of an RI's paths yielded for component, as the field a
// user wrote (spec.pytorchReplicaSpecs.Worker.replicas), so an error can name it instead of the RI's jq; "" when
// it cannot tell. An object or a list is found by identity (jq hands out the input's own values). A scalar is
// found by value: the one place holding it, or the one place under a key naming the component.
func fieldOf(obj map[string]any, v any, component string) string {
	return renderField(locate(obj, v, component))
}

// segment is one step of a field path: a key of an object, or an element of a list (key is then "").
type segment struct {
	key  string
	text string // as the path is written: ".key", "[key]", "[name]" or "[3]"
}

func renderField(path []segment) string {
	var b strings.Builder
	for _, s := range path {
		b.WriteString(s.text)
	}
	return strings.TrimPrefix(b.String(), ".")
}

// locate is fieldOf's path as segments, nil when it cannot tell.
func locate(obj map[string]any, v any, component string) []segment {
	if obj == nil {
		return nil
	}
	var matches [][]segment
	var walk func(x any, path []segment) bool
	walk = func(x any, path []segment) bool {
		if same(x, v) {
			matches = append(matches, slices.Clone(path))
			if len(matches) > maxFieldMatches || isContainer(v) {
				return false
			}
		}
		switch c := x.(type) {
		case map[string]any:
			for k, child := range c {
				if len(path) == 1 && path[0].key == "metadata" && k == "managedFields" {
					continue
				}
				if !walk(child, append(path, segment{key: k, text: fieldKey(k)})) {
					return false
				}
			}
		case []any:
			for i, child := range c {
				if !walk(child, append(path, segment{text: elementKey(i, child)})) {
					return false
				}
			}
		}
		return true
	}
	walk(obj, nil)
	if len(matches) > maxFieldMatches {
		return nil
	}
	if len(matches) > 1 {
		name, _, _ := strings.Cut(component, "/")
		var named [][]segment
		for _, m := range matches {
			if slices.ContainsFunc(m, func(s segment) bool { return strings.EqualFold(s.key, name) }) {
				named = append(named, m)
			}
		}
		matches = named
	}
	if len(matches) != 1 {
		return nil
	}
	return matches[0]
}

// plainKey is a key a field path writes after a dot; others go in brackets (annotations, labels).
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func fieldKey(k string) string {
	if plainKey.MatchString(k) {
		return "." + k
	}
	return "[" + k + "]"
}

// elementKey names a list element by its name when it has one, as Kubernetes messages name containers.
func elementKey(i int, x any) string {
	if m, ok := x.(map[string]any); ok {
		if name, ok := m["name"].(string); ok && name != "" {
			return "[" + name + "]"
		}
	}
	return "[" + strconv.Itoa(i) + "]"
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// same reports whether x is v: the same object or list, or an equal scalar.
func same(x, v any) bool {
	switch a := v.(type) {
	case map[string]any:
		b, ok := x.(map[string]any)
		return ok && a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	case []any:
		b, ok := x.([]any)
		return ok && len(a) > 0 && len(b) == len(a) && &a[0] == &b[0]
	case nil, bool:
		return false // too common to tell one place from another
	case *big.Int:
		b, ok := x.(*big.Int)
		return ok && a.Cmp(b) == 0
	case float64:
		switch b := x.(type) {
		case float64:
			return a == b
		case int:
			return a == float64(b)
		}
	case int:
		switch b := x.(type) {
		case int:
			return a == b
		case float64:
			return float64(a) == b
		}
	case string:
		b, ok := x.(string)
		return ok && a == b && a != ""
	}
	return false
}
