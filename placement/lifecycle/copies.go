package lifecycle

import "github.com/fleetflow/fleetflow/placement/structs"

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

// anyPublished reports whether a decision was published for workload id and not forgotten since.
func (p *Controller) anyPublished(id string) bool {
	for _, c := range p.ledger.CopiesOf(id) {
		if c.Published.Action != "" {
			return true
		}
	}
	return false
}

// avoided lists the clusters workload id is being moved off, with why.
func (p *Controller) avoided(id string) map[string]string {
	var avoid map[string]string
	for _, c := range p.ledger.CopiesOf(id) {
		if c.Avoid != "" {
			if avoid == nil {
				avoid = map[string]string{}
			}
			avoid[c.Cluster] = c.Avoid
		}
	}
	return avoid
}
