package karta

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Registry is an immutable set of compiled RIs, looked up by the GVK they analyze. A user RI for a
// GVK overrides the built-in one; among user RIs for one GVK, the one created last wins (Compiled.Created, then
// the name), and among RIs without a creation time the one added last. Not the one added last whatever its
// creation: every restart of fleetflow past the streams' duplicate window publishes each RI again, in the order
// of their names, which put the RI of the last name in force. With and Without return new registries, so
// readers holding an older one are never disturbed.
type Registry struct {
	builtins map[schema.GroupVersionKind]*Compiled
	users    []*Compiled // by creation, then name; those without a creation time in the order they were added
}

// NewRegistry builds a registry from compiled RIs, built-in or not.
func NewRegistry(cs ...*Compiled) *Registry {
	r := &Registry{builtins: map[schema.GroupVersionKind]*Compiled{}}
	for _, c := range cs {
		r = r.with(c, true)
	}
	return r
}

// With returns a copy of r that also holds c. A built-in replaces the built-in for its GVK; a user
// RI replaces the user RI of the same name.
func (r *Registry) With(c *Compiled) *Registry {
	return r.with(c, false)
}

func (r *Registry) with(c *Compiled, inPlace bool) *Registry {
	if c == nil {
		return r
	}
	next := r
	if !inPlace {
		next = r.clone()
	}
	if c.Builtin {
		next.builtins[c.GVK] = c
		return next
	}
	kept := next.users[:0:0]
	for _, u := range next.users {
		if u.Name != c.Name {
			kept = append(kept, u)
		}
	}
	at := len(kept)
	for at > 0 && createdAfter(kept[at-1], c) {
		at--
	}
	next.users = slices.Insert(kept, at, c)
	return next
}

// createdAfter reports whether a comes after b in a registry's order of user RIs: created later, or at the same
// time under a later name. RIs without a creation time keep the order they were added in.
func createdAfter(a, b *Compiled) bool {
	if a.Created.IsZero() || b.Created.IsZero() {
		return false
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return a.Name > b.Name
}

// Without returns a copy of r without the user RI called name; the built-in for its GVK, if any,
// shows again.
func (r *Registry) Without(name string) *Registry {
	next := r.clone()
	kept := next.users[:0:0]
	for _, u := range next.users {
		if u.Name != name {
			kept = append(kept, u)
		}
	}
	next.users = kept
	return next
}

func (r *Registry) clone() *Registry {
	next := &Registry{builtins: make(map[schema.GroupVersionKind]*Compiled, len(r.builtins))}
	for k, v := range r.builtins {
		next.builtins[k] = v
	}
	next.users = append([]*Compiled(nil), r.users...)
	return next
}

// Lookup returns the RI that analyzes gvk.
func (r *Registry) Lookup(gvk schema.GroupVersionKind) (*Compiled, bool) {
	for i := len(r.users) - 1; i >= 0; i-- {
		if r.users[i].GVK == gvk {
			return r.users[i], true
		}
	}
	c, ok := r.builtins[gvk]
	return c, ok
}

// versionsOf lists the kinds of group and kind, in any version, that some RI (built-in or not) analyzes.
func (r *Registry) versionsOf(group, kind string) []schema.GroupVersionKind {
	var out []schema.GroupVersionKind
	for gvk := range r.builtins {
		if gvk.Group == group && gvk.Kind == kind {
			out = append(out, gvk)
		}
	}
	for _, c := range r.users {
		if c.GVK.Group == group && c.GVK.Kind == kind {
			out = append(out, c.GVK)
		}
	}
	return out
}

// LookupOtherVersion returns the RI of another version of gvk's group and kind when exactly one version has
// one, for a reader that holds an object in a version no RI names.
func (r *Registry) LookupOtherVersion(gvk schema.GroupVersionKind) (*Compiled, bool) {
	gvks := r.versionsOf(gvk.Group, gvk.Kind)
	if len(gvks) != 1 {
		return nil, false
	}
	return r.Lookup(gvks[0])
}

// HasGroupKind reports whether some RI, built-in or not, analyzes a kind of group in any version.
func (r *Registry) HasGroupKind(group, kind string) bool { return len(r.versionsOf(group, kind)) > 0 }

// DivisibleGroupKind reports whether a group and kind have an RI in some version (known) and whether, in
// every version that has one, the RI in force makes the kind divisible (Compiled.Divisible).
func (r *Registry) DivisibleGroupKind(group, kind string) (divisible, known bool) {
	gvks := r.versionsOf(group, kind)
	for _, gvk := range gvks {
		if c, ok := r.Lookup(gvk); ok && !c.Divisible() {
			return false, true
		}
	}
	return len(gvks) > 0, len(gvks) > 0
}

// All returns every RI held: built-ins sorted by name, then user RIs in the order they were added.
func (r *Registry) All() []*Compiled {
	out := make([]*Compiled, 0, len(r.builtins)+len(r.users))
	for _, c := range r.builtins {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return append(out, r.users...)
}
