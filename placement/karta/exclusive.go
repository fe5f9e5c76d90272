package karta

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AnnotationExclusiveTopology, on a ResourceInterface, holds a jq expression evaluated on the CR that yields the
// workload's exclusive-topology units: objects {"topologyKey": KEY, "pods": {"COMPONENT[/INSTANCE]": N, ...}},
// with "alone": true when the workload's pods outside its units may not run in a unit's domain either (the
// controller's anti-affinity matches every pod of the workload, as JobSet's does a non-exclusive Job's), and
// "allNamespaces": true when the anti-affinity keeps the unit apart from the kind's pods in every namespace, not
// only its own (JobSet's namespaceSelector is {}).
// Karta has no field for it and ignores annotations, so RIs carrying it still load into Karta unchanged.
//
// Some controllers keep the pods of each replica of a workload together in one topology domain that no other
// replica shares (LeaderWorkerSet and JobSet under their exclusive-topology annotations): they add the pod
// affinity and anti-affinity that does it to the pods they create, so the pod templates an RI reads do not
// show it.
const AnnotationExclusiveTopology = "fleetflow.io/exclusive-topology"

// exclusiveField names the annotation in errors.
const exclusiveField = `metadata.annotations["` + AnnotationExclusiveTopology + `"]`

// ExclusiveUnit is a set of a workload's pods that run together in one domain of TopologyKey (the nodes sharing a
// value of the label), which no other unit of the workload with the same key shares.
type ExclusiveUnit struct {
	TopologyKey string
	// Alone: no pod of the workload outside its units runs in the unit's domain.
	Alone bool
	// AllNamespaces: the unit keeps out of the domains of the kind's workloads in every namespace, not only its own.
	AllNamespaces bool
	// Pods is how many pods of each component instance the unit holds, in the analysis's component order.
	Pods []UnitPods
}

// UnitPods is the pods of one component instance in an exclusive unit.
type UnitPods struct {
	Component string
	Instance  string
	Pods      int64
}

// String renders the unit as "leader 1 + worker 3".
func (u ExclusiveUnit) String() string {
	parts := make([]string, 0, len(u.Pods))
	for _, p := range u.Pods {
		parts = append(parts, fmt.Sprintf("%s %d", ComponentKey(p.Component, p.Instance), p.Pods))
	}
	return strings.Join(parts, " + ")
}

// exclusiveUnits evaluates the RI's exclusive-topology expression against the analysis's components. A unit
// must name component instances of the analysis and, with the other units, hold no more of their pods than
// they have; a unit of no pods is dropped.
func (c *Compiled) exclusiveUnits(ev *evaluation, components []ComponentInstance) ([]ExclusiveUnit, error) {
	out, err := c.run(ev, "", c.exclusive)
	if err != nil || len(out) == 0 {
		return nil, err
	}
	fail := func(i int, format string, args ...any) error {
		return c.evalError(ev, "", c.exclusive, fmt.Errorf("unit %d: "+format, append([]any{i}, args...)...))
	}
	index := make(map[string]int, len(components))
	for i, ci := range components {
		index[ComponentKey(ci.Name, ci.Instance)] = i
	}
	held := make([]int64, len(components))
	units := make([]ExclusiveUnit, 0, len(out))
	for i, v := range out {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fail(i, "is %s, want an object {topologyKey, pods}", typeName(v))
		}
		for field := range obj {
			if field != "topologyKey" && field != "pods" && field != "alone" && field != "allNamespaces" {
				return nil, fail(i, "unknown field %q (want topologyKey, pods, alone and allNamespaces)", field)
			}
		}
		alone, ok := obj["alone"].(bool)
		if _, set := obj["alone"]; set && !ok {
			return nil, fail(i, "alone is %s, want a boolean", typeName(obj["alone"]))
		}
		allNamespaces, ok := obj["allNamespaces"].(bool)
		if _, set := obj["allNamespaces"]; set && !ok {
			return nil, fail(i, "allNamespaces is %s, want a boolean", typeName(obj["allNamespaces"]))
		}
		key, _ := obj["topologyKey"].(string)
		if key == "" {
			return nil, fail(i, "topologyKey is %s, want a node label key", typeName(obj["topologyKey"]))
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fail(i, "topologyKey %q is not a label key: %s", key, strings.Join(errs, "; "))
		}
		pods, ok := obj["pods"].(map[string]any)
		if !ok {
			return nil, fail(i, "pods is %s, want an object of pod counts by component", typeName(obj["pods"]))
		}
		unit := ExclusiveUnit{TopologyKey: key, Alone: alone, AllNamespaces: allNamespaces}
		// By name, so an error names the same component every time: a map's order changes from run to run.
		names := make([]string, 0, len(pods))
		for name := range pods {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			n, set, err := toCount(pods[name])
			if err != nil {
				return nil, fail(i, "pods of %q: %w", name, err)
			}
			if !set || n == 0 {
				continue
			}
			at, known := index[name]
			if !known {
				return nil, fail(i, "pods of %q: no component instance of this object has that name (known: %s)",
					name, strings.Join(sortedKeys(index), ", "))
			}
			held[at] += n
			if held[at] > components[at].Pods {
				return nil, fail(i, "the units hold %d pods of %q, which has %d", held[at], name, components[at].Pods)
			}
			unit.Pods = append(unit.Pods, UnitPods{Component: components[at].Name, Instance: components[at].Instance, Pods: n})
		}
		if len(unit.Pods) == 0 {
			continue
		}
		sort.Slice(unit.Pods, func(a, b int) bool {
			return index[ComponentKey(unit.Pods[a].Component, unit.Pods[a].Instance)] <
				index[ComponentKey(unit.Pods[b].Component, unit.Pods[b].Instance)]
		})
		units = append(units, unit)
	}
	return units, nil
}

// ComponentKey names a component instance as placement and reports do: "component", or "component/instance"
// when the component has instances.
func ComponentKey(component, instance string) string {
	if instance == "" {
		return component
	}
	return component + "/" + instance
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
