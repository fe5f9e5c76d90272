// Package bus owns fleetflow's connection to NATS JetStream: the embedded server used when no external
// URL is given, idempotent provisioning of the streams defined in schemas, the CloudEvents binary-mode
// codec (ce- headers), publishing with content-derived dedupe ids, and the consumer loop that moves bad
// messages to the dead-letter stream instead of retrying them forever or dropping them unseen.
package bus
