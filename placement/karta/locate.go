package karta

import (
	"maps"
	"math/big"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unsafe"
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

// maxTemplateDepth bounds how deep in a pod template an RI's value is searched for an object of the CR's own.
const maxTemplateDepth = 3

// templatePath finds where in obj sits the pod template v that an RI's path yielded, as a field path with list
// elements as their decimal index; nil when it cannot tell. jq hands out the input's own values, so the template
// is found by identity; an RI that adjusts the template (adds the init container its operator injects) yields
// a new object, whose untouched parts (its metadata, a container) are still the CR's own: the template is then
// where such a part is, less the part's place in it. The shallowest part found decides.
func templatePath(obj map[string]any, v any, index *identityIndex) []string {
	type part struct {
		rel []string
		x   any
	}
	queue := []part{{x: v}}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if at, ok := index.find(obj, p.x); ok {
			if len(at) >= len(p.rel) && slices.Equal(at[len(at)-len(p.rel):], p.rel) && len(at) > len(p.rel) {
				return slices.Clone(at[:len(at)-len(p.rel)])
			}
			continue
		}
		if len(p.rel) == maxTemplateDepth {
			continue
		}
		switch c := p.x.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(c)) {
				queue = append(queue, part{rel: append(slices.Clone(p.rel), k), x: c[k]})
			}
		case []any:
			for i, child := range c {
				queue = append(queue, part{rel: append(slices.Clone(p.rel), strconv.Itoa(i)), x: child})
			}
		}
	}
	return nil
}

// identityIndex maps the objects and lists of one CR to their field paths, built on first use.
type identityIndex struct {
	paths map[uintptr][]string
}

// find returns the path of x in obj when x is one of obj's own objects or non-empty lists.
func (ix *identityIndex) find(obj map[string]any, x any) ([]string, bool) {
	key, ok := identity(x)
	if !ok {
		return nil, false
	}
	if ix.paths == nil {
		ix.paths = map[uintptr][]string{}
		var walk func(x any, path []string)
		walk = func(x any, path []string) {
			if k, ok := identity(x); ok && len(path) > 0 {
				if _, seen := ix.paths[k]; !seen {
					ix.paths[k] = slices.Clone(path)
				}
			}
			switch c := x.(type) {
			case map[string]any:
				for k, child := range c {
					if len(path) == 0 && (k == "status" || k == "metadata") {
						continue // no pod template lives there
					}
					walk(child, append(path, k))
				}
			case []any:
				for i, child := range c {
					walk(child, append(path, strconv.Itoa(i)))
				}
			}
		}
		walk(obj, nil)
	}
	path, found := ix.paths[key]
	return path, found
}

// identity is the address of an object or a non-empty list's first element, which tells it from any other.
func identity(x any) (uintptr, bool) {
	switch c := x.(type) {
	case map[string]any:
		if c == nil {
			return 0, false
		}
		return uintptr(reflect.ValueOf(c).UnsafePointer()), true
	case []any:
		if len(c) == 0 {
			return 0, false
		}
		return uintptr(unsafe.Pointer(&c[0])), true
	}
	return 0, false
}
