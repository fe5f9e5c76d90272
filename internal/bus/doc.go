// Package bus owns fleetflow's connection to NATS JetStream: the embedded server used when no external
// URL is given, idempotent provisioning of the streams defined in schemas, the CloudEvents binary-mode
// codec (ce- headers), publishing with content-derived dedupe ids, and the consumer loop that terminates
// bad messages with a logged reason instead of retrying them forever.
package bus
