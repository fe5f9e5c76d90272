// Package fleetspec owns the YAML description of a fleet: its namespaces, clusters and their nodes.
// The same description seeds a real local fleet (Node objects on each apiserver) and a simulated one
// (fleetflow simulate), so both agree on what a fleet file means.
package fleetspec
