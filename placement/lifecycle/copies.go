package lifecycle

import (
	"maps"

	"github.com/fleetflow/fleetflow/placement/structs"
)

// copyOf returns workload id's copy on cluster, to read: the zero copy when the ledger has none.
func (p *Controller) copyOf(id, cluster string) structs.Copy {
	if c := p.ledger.Copy(id, cluster); c != nil {
		return *c
	}
	return structs.Copy{WorkloadID: id, Cluster: cluster}
}

// editCopy changes workload id's copy on cluster by edit, and stores the result.
func (p *Controller) editCopy(id, cluster string, edit func(c *structs.Copy)) {
	c := p.copyOf(id, cluster)
	edit(&c)
	p.ledger.PutCopy(&c)
}

// publishedOn returns the last decision published for workload id on each cluster that has one, by cluster.
func (p *Controller) publishedOn(id string) []*structs.Copy {
	copies := p.ledger.CopiesOf(id)
	out := copies[:0:0]
	for _, c := range copies {
		if c.Published.Action != "" {
			out = append(out, c)
		}
	}
	return out
}

// avoided lists the clusters workload id is being moved off, with why, as the store has it (read-only).
func (p *Controller) avoided(id string) map[string]string {
	if wl := p.store.Snapshot().Workload(id); wl != nil {
		return wl.Avoid
	}
	return nil
}

// avoid has workload e keep off cluster, for why, or no longer when why is "".
func (p *Controller) avoid(e *workloadEntry, cluster, why string) error {
	info := p.workloadInfo(e)
	if info.Avoid[cluster] == why {
		return nil
	}
	avoid := maps.Clone(info.Avoid)
	if why == "" {
		delete(avoid, cluster)
	} else {
		if avoid == nil {
			avoid = map[string]string{}
		}
		avoid[cluster] = why
	}
	info.Avoid = avoid
	_, err := p.store.UpsertWorkload(p.at.seq, info)
	return err
}

// reapplyWaits reports whether the Apply the applier gave up on for copy c waits: nothing changed since that could
// make it go through. A change of its cluster after the failure was reported makes it due.
func (p *Controller) reapplyWaits(c *structs.Copy) bool {
	if c.Reapply != structs.ReapplyWaits {
		return false
	}
	ce := p.clusters[c.Cluster]
	return ce == nil || ce.changedAt <= c.ReapplyAfter
}

// reapplyDue reports whether the Apply of copy c is sent again the next time its workload is placed there.
func (p *Controller) reapplyDue(c *structs.Copy) bool {
	return c.Reapply == structs.ReapplyDue || c.Reapply == structs.ReapplyWaits && !p.reapplyWaits(c)
}
