// Package status is the status writer: it puts workload, Cluster, SchedulePolicy and ResourceInterface
// status back on the control plane, from what the placer decides and what the workload clusters report.
package status
