// Package failover tests, on a real local fleet of its own, that a workload fails over when its
// cluster's apiserver goes away. It has a package of its own because the test stops an apiserver of
// the package's fleet for good.
package failover
