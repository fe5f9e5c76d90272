// Package placer is the JetStream subscriber that keeps the placement core's fleet view current and turns
// fleet events into verdicts and per-cluster decisions, rebuilding its view from the streams on a restart.
package placer
