// Package modeltest builds read models for tests: the messages of a fleet as the streams would hold them, and
// a synthetic fleet of any size shaped as shared/tools/fleetgen shapes its (GPU nodes of 8 GPUs used by
// quarters, CPU nodes, 30 to 70% of each cluster's nodes with GPUs).
package modeltest
