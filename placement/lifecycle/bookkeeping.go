package lifecycle

import "maps"

// savedEntry is what reconcile may change of one workload: its last verdict, its published decisions,
// and whether it is still tracked.
type savedEntry struct {
	entry       *workloadEntry
	lastVerdict string
	published   map[string]publishedDecision
	reapply     map[string]bool
	uidKnown    bool
}

func (p *Controller) saveBookkeeping(touched *touchedSet) []savedEntry {
	var saved []savedEntry
	seen := map[string]bool{}
	save := func(id string) {
		e := p.workloads[id]
		if e == nil || seen[id] {
			return
		}
		seen[id] = true
		_, uidKnown := p.byUID[e.ref.UID]
		saved = append(saved, savedEntry{entry: e, lastVerdict: e.lastVerdict, published: maps.Clone(e.published),
			reapply: maps.Clone(e.reapply), uidKnown: uidKnown})
	}
	for id := range touched.ids {
		save(id)
	}
	for id := range touched.verdicts {
		save(id)
	}
	for id := range touched.invalid {
		save(id)
	}
	return saved
}

func (p *Controller) restoreBookkeeping(saved []savedEntry) {
	for _, s := range saved {
		e := s.entry
		e.lastVerdict = s.lastVerdict
		e.published, e.reapply = s.published, s.reapply
		p.workloads[e.id] = e
		if s.uidKnown {
			p.byUID[e.ref.UID] = e.id
		}
	}
}
