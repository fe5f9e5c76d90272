// Package structs is the domain model of the placement core: compact resource vectors, the fleet objects the
// store holds (clusters, nodes, workloads, reservations) and the decisions the scheduler makes.
// Every object is immutable once it has been handed to the store: writers build new objects, never edit old ones.
package structs
