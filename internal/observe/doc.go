// Package observe owns what fleetflow's processes tell their operators beyond logs: the Prometheus metrics
// of every part (events handled and published, consumer lag, verdicts, applies, leadership) and the health
// endpoints Kubernetes probes (/healthz, /readyz), served together on one address (Serve).
package observe
