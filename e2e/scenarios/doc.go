// Package scenarios holds end-to-end scheduling scenarios on a real local fleet (fill-and-spill, GPU
// fragmentation, a policy change moving a workload, a burst of CRs against exact capacity, a Duplicate copy
// reaching a cluster that starts to match), each with its expected outcome worked out by hand from the
// placement semantics, plus the PyTorchJob builder and verdict helpers those tests (and the failover
// package's) share. Every scenario seeds the fleet's nodes it needs, so one fleet of two workload clusters
// serves them all in turn.
package scenarios
