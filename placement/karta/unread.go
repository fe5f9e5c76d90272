package karta

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Unread lists the entries of obj that look like the ones the RI's components read their pods from but that
// none reads, each with why it matters: a PyTorchJob's spec.pytorchReplicaSpecs.Workr beside the Master and
// Worker the RI knows (a typo, or a replica type the RI predates) holds pods that placement does not count.
// An entry is such a sibling when it sits in the same object as an entry a component read its pod template
// from, and holds the same field (template). It runs the RI's template paths once more, so it is for tools
// that show a CR to its author (analyze), not for placement's hot path.
func (c *Compiled) Unread(obj map[string]any) ([]UnreadField, error) {
	input, err := c.jqInput(obj)
	if err != nil {
		return nil, err
	}
	ev := c.newEvaluation(input)
	defer ev.release()
	type parent struct{ path, field string }
	read := map[parent]map[string]bool{}      // the entries read under each parent, by key
	containers := map[parent]map[string]any{} // the parent objects
	for _, cc := range c.components {
		p := cc.templateProgram()
		if p == nil {
			continue
		}
		out, err := c.run(ev, cc.name, p)
		if err != nil {
			return nil, err
		}
		for _, v := range out {
			if _, ok := v.(map[string]any); !ok {
				continue
			}
			path := locate(input, v, cc.name)
			if len(path) < 3 || path[len(path)-2].key == "" || path[len(path)-1].key == "" {
				continue // not an entry of an object by key (a list element, or the CR's own spec.template)
			}
			holder, ok := valueAt(input, path[:len(path)-2]).(map[string]any)
			if !ok {
				continue
			}
			at := parent{path: renderField(path[:len(path)-2]), field: path[len(path)-1].key}
			if read[at] == nil {
				read[at], containers[at] = map[string]bool{}, holder
			}
			read[at][path[len(path)-2].key] = true
		}
	}
	// An entry named as a component counts as read too: a path that rewrites its template (a default added)
	// yields a copy, which locate cannot find.
	named := func(key string) bool {
		return slices.ContainsFunc(c.components, func(cc *compiledComponent) bool { return strings.EqualFold(cc.name, key) })
	}
	var unread []UnreadField
	for _, at := range slices.SortedFunc(maps.Keys(read), func(a, b parent) int { return strings.Compare(a.path+a.field, b.path+b.field) }) {
		holder := containers[at]
		for _, key := range slices.Sorted(maps.Keys(holder)) {
			entry, ok := holder[key].(map[string]any)
			if read[at][key] || named(key) || !ok || entry[at.field] == nil {
				continue
			}
			unread = append(unread, UnreadField{Field: strings.TrimPrefix(at.path+fieldKey(key), "."),
				Reason: fmt.Sprintf("no component of %s reads it, so its pods are not counted", c.label())})
		}
	}
	return unread, nil
}

// UnreadField is an entry of a CR that Unread found no component reads.
type UnreadField struct {
	Field, Reason string
}

func (u UnreadField) String() string { return u.Field + ": " + u.Reason }

// valueAt is the value at path in obj, nil when there is none.
func valueAt(obj map[string]any, path []segment) any {
	var x any = obj
	for _, s := range path {
		m, ok := x.(map[string]any)
		if !ok || s.key == "" {
			return nil
		}
		x = m[s.key]
	}
	return x
}
