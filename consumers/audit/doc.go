// Package audit is the audit tail, a plain reader of the streams that prints what happened to the
// workloads, decoded, and the reader of the dead letters the consumers gave up on; neither has any effect on
// the pipeline.
package audit
