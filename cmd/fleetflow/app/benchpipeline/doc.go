// Package benchpipeline measures the event pipeline end to end: synthetic producers publish a fleet and a
// stream of workloads, as the real producers would, through an embedded JetStream into the real placer,
// and the verdicts and decisions it persists are timed against a plain JetStream publish of messages of
// the same size. `fleetflow bench pipeline` prints what Run returns.
package benchpipeline
