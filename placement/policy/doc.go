// Package policy validates SchedulePolicies and answers the questions the scheduler asks of them: does this
// policy select this workload, may it use this cluster, which tier is the cluster in, which policy wins.
// A Policy is compiled once (selectors parsed, defaults filled) when it enters the fleet view and is immutable after.
package policy
