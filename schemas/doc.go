// Package schemas is fleetflow's wire contract: CloudEvent type names, subject names, payload structs with
// their validation, and the JetStream streams and consumers that carry them. Each of these is defined here
// and only here, so producers, consumers and third-party auditors agree on one definition.
package schemas
