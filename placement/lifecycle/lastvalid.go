package lifecycle

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/objects"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/schemas"
)

// recoverLastValid puts back in force, after a rebuild, the last valid version of each RI and policy whose
// newest version is refused. A running placer keeps that version in memory, as an admission webhook keeps
// the object it admitted; the state stream holds the newest version alone, so a restarted placer finds it
// in the events stream's history, as long as the history (--history) still holds it. RIs come first, since
// a policy may name a kind only an RI describes.
func (p *Controller) recoverLastValid(history History, touched *touchedSet) error {
	for _, name := range slices.Sorted(maps.Keys(p.refusedRIs)) {
		object := p.refusedRIs[name]
		last, err := lastValidVersion(history, object, func(changed *schemas.ObjectChanged) bool {
			data, err := json.Marshal(changed.Object)
			if err != nil {
				return false
			}
			ris, err := karta.ParseResourceInterfaces(data, "ResourceInterface "+name)
			if err != nil || len(ris) != 1 {
				return false
			}
			_, err = karta.Compile(ris[0], "ResourceInterface "+name)
			return err == nil
		})
		if err != nil {
			return err
		}
		if last == nil {
			p.log.Warn("ResourceInterface's newest version refused and no valid one in the history; not in force", "ri", name)
			continue
		}
		if err := p.onResourceInterfaceChanged(last, touched, true); err != nil {
			return err
		}
		p.refusedRIs[name] = object // the newest version is still the refused one
		p.log.Info("ResourceInterface's newest version refused; its last valid version from the history is in force", "ri", name)
	}
	if len(p.refusedRIs) > 0 {
		if err := p.recompileRefusedPolicies(touched, true); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.policies)) {
		e := p.policies[name]
		if e.refused == nil || e.compiled != nil || e.object.subject == "" {
			continue
		}
		var compiled *policy.Policy
		last, err := lastValidVersion(history, e.object, func(changed *schemas.ObjectChanged) bool {
			var sp v1alpha1.SchedulePolicy
			if runtime.DefaultUnstructuredConverter.FromUnstructured(changed.Object, &sp) != nil {
				return false
			}
			sp.Name = name
			c, err := policy.Compile(&sp, objects.KindInfo(p.registry))
			if err == nil {
				compiled = c
			}
			return err == nil
		})
		if err != nil {
			return err
		}
		if last == nil {
			p.log.Warn("policy's newest version refused and no valid one in the history; not in force", "policy", name, "error", e.err)
			continue
		}
		// lastValidVersion accepts versions oldest first, so compiled is the last one's.
		e.compiled = compiled
		if err := p.store.UpsertPolicy(p.at.seq, compiled); err != nil {
			return err
		}
		p.log.Info("policy's newest version refused; its last valid version from the history is in force", "policy", name, "error", e.err)
	}
	return nil
}

// lastValidVersion reads the versions of one object the events stream holds, oldest first, and returns the
// newest that valid accepts, nil when none does. Versions of another object of the same name (another UID)
// do not count.
func lastValidVersion(history History, object refusedObject, valid func(*schemas.ObjectChanged) bool) (*schemas.ObjectChanged, error) {
	if history == nil {
		return nil, nil
	}
	var last *schemas.ObjectChanged
	err := history.Events(object.subject, func(payload schemas.Payload) {
		if changed, ok := payload.(*schemas.ObjectChanged); ok && changed.Ref().UID == object.uid && valid(changed) {
			last = changed
		}
	})
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", object.subject, err)
	}
	return last, nil
}
