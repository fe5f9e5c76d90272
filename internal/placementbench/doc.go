// Package placementbench measures the placement core alone, without NATS or apiservers: it builds a synthetic
// fleet of mixed GPU and CPU nodes in the fleet view, then places a stream of mixed workloads of the built-in
// kinds, analyzed by the built-in ResourceInterfaces, through the scheduler. It backs `fleetflow bench placement`
// and the go test benchmarks.
package placementbench
