// Package schemas is fleetflow's wire contract: CloudEvent type names, subject names, and payload structs with
// their validation, defined here and only here so that producers, consumers and third-party auditors agree on
// one definition. It depends on no transport: schemas/codec binds it to CloudEvents and schemas/streams
// defines the JetStream streams and consumers that carry it, so placement/ can use the payloads.
package schemas
