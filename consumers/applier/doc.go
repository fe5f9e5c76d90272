// Package applier carries the placer's decisions out on one workload cluster, idempotently with
// server-side apply, and reports each outcome (applied or failed) back on the streams.
package applier
