// Package objects holds what the placer, the appliers, the status writer and the producers must read the same
// way from Kubernetes objects: what of an object is copied to a workload cluster (SanitizeForCopy) and its
// content hash, its generation, when a Cluster is invalid, how RIs are ordered and which kinds a policy may
// divide. It is pure: no client, no I/O.
package objects
