// Package audit is the audit tail: a plain reader of the streams that prints what happened to the
// workloads, decoded, with no effect on the pipeline.
package audit
