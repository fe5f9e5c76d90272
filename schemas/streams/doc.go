// Package streams defines fleetflow's JetStream streams and durable consumers over the subjects of schemas:
// the one definition that every component and the charts' set-up create them from.
package streams
