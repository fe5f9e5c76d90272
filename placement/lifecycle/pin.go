package lifecycle

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetflow/fleetflow/placement/structs"
	"github.com/fleetflow/fleetflow/schemas"
)

// pinned reports whether the copies of wl have their pods pinned: the policy it is placed by pins pods, and some
// pod template can be written to. It reads the policy, not the placement's Pins, so a copy's templates stay as
// they were while its policy does (a placement restored at a rebuild has no Pins).
func (p *Controller) pinned(wl *structs.Workload) bool {
	if wl == nil || wl.Placement == nil || !wl.Pinnable() {
		return false
	}
	pol := p.store.Snapshot().Policy(wl.Placement.Policy)
	return pol != nil && pol.Spec.PinPods && len(pinKeys(wl.PodGroups)) > 0
}

// noPins are the pins of a pinned copy whose placement holds none (restored at a rebuild, or not capacity
// aware): its pods are gated, and the pinner lets them go unpinned.
const noPins = "{}"

// copyPins are the pins an Apply of wl to cluster carries: "" when its pods are not pinned, noPins when they
// are but the placement holds none there.
func (p *Controller) copyPins(wl *structs.Workload, cluster string) string {
	if !p.pinned(wl) {
		return ""
	}
	return cmp.Or(pinsOn(wl, cluster), noPins)
}

// samePins reports whether a copy that carried pins published needs no new Apply for pins: the same, or none
// known now for a copy that was pinned (a restored placement keeps the pins sent before).
func samePins(pins, published string) bool {
	return pins == published || pins == noPins && published != ""
}

// pinsOn encodes the pins of wl on one cluster for the decision, by pinKeys; "" when it has none there.
func pinsOn(wl *structs.Workload, cluster string) string {
	if wl == nil || wl.Placement == nil || len(wl.Placement.Pins[cluster]) == 0 {
		return ""
	}
	keys := pinKeys(wl.PodGroups)
	pins := schemas.Pins{}
	for _, pin := range wl.Placement.Pins[cluster] {
		key, ok := keys[pin.Component]
		if !ok {
			continue
		}
		if pins[key] == nil {
			pins[key] = map[string]int64{}
		}
		pins[key][pin.Node] += pin.Pods
	}
	return pins.String()
}

// pinKeys maps each component whose pods are pinned to the key of its template's pins: its name, or, for
// components made from one template (LeaderWorkerSet's leader and workers without a leader template), their
// names joined by "+", their nodes merged, when their pods ask for the same (any pod of the template may then
// take any of their nodes). Components that share a template but ask for different amounts are not pinned.
func pinKeys(groups []structs.PodGroup) map[string]string {
	byPath := map[string][]int{}
	var paths []string
	for i, g := range groups {
		if len(g.PodTemplatePath) == 0 {
			continue
		}
		path := strings.Join(g.PodTemplatePath, "\x00")
		if byPath[path] == nil {
			paths = append(paths, path)
		}
		byPath[path] = append(byPath[path], i)
	}
	keys := map[string]string{}
	for _, path := range paths {
		members := byPath[path]
		names := make([]string, 0, len(members))
		alike := true
		for _, i := range members {
			names = append(names, groups[i].Component)
			alike = alike && slices.Equal(groups[i].Request, groups[members[0]].Request)
		}
		if !alike {
			continue
		}
		slices.Sort(names)
		key := strings.Join(names, "+")
		for _, i := range members {
			keys[groups[i].Component] = key
		}
	}
	return keys
}

// pinTemplates gives each pod template of obj, a copy of ref, whose pods are pinned (pinKeys) the scheduling
// gate that holds its pods until the pinner pinned them, and the label and annotations the pinner finds them
// and their pins by.
func pinTemplates(obj map[string]any, ref schemas.ObjectRef, wl *structs.Workload) error {
	copyName := schemas.PinCopy(ref.Kind, ref.APIVersion, ref.Name)
	keys := pinKeys(wl.PodGroups)
	for _, g := range wl.PodGroups {
		key, ok := keys[g.Component]
		if !ok {
			continue
		}
		template, err := fieldMap(obj, g.PodTemplatePath)
		if err != nil {
			return fmt.Errorf("pin the pods of %s component %s: %w", ref.Key(), g.Component, err)
		}
		metadata := childMap(template, "metadata")
		childMap(metadata, "labels")[schemas.LabelPinned] = "true"
		annotations := childMap(metadata, "annotations")
		annotations[schemas.AnnotationPinComponent] = key
		annotations[schemas.AnnotationPinCopy] = copyName
		spec := childMap(template, "spec")
		gates, _ := spec["schedulingGates"].([]any)
		if !slices.ContainsFunc(gates, func(gate any) bool {
			m, ok := gate.(map[string]any)
			return ok && m["name"] == schemas.SchedulingGatePinned
		}) {
			spec["schedulingGates"] = append(gates, map[string]any{"name": schemas.SchedulingGatePinned})
		}
	}
	return nil
}

// fieldMap walks path (an array index as its decimal string) to an object.
func fieldMap(obj map[string]any, path []string) (map[string]any, error) {
	var cur any = obj
	for i, seg := range path {
		switch x := cur.(type) {
		case map[string]any:
			cur = x[seg]
		case []any:
			n, err := strconv.Atoi(seg)
			if err != nil || n < 0 || n >= len(x) {
				return nil, fmt.Errorf("field %v: no element %s", path[:i], seg)
			}
			cur = x[n]
		default:
			return nil, fmt.Errorf("field %v is not an object or a list", path[:i])
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("field %v is not an object", path)
	}
	return m, nil
}

// childMap returns m[key] as an object, making it one when it is absent or null.
func childMap(m map[string]any, key string) map[string]any {
	child, ok := m[key].(map[string]any)
	if !ok {
		child = map[string]any{}
		m[key] = child
	}
	return child
}
