// Package contract holds what the placer, the appliers and the status writer must read and write the same
// way: a workload's content hash and generation, the place of a decision or verdict in its stream, which
// API errors are permanent, when a Cluster is invalid, and how RIs are ordered and policies validated. It
// is a leaf below those components, so none of them imports another.
package contract
