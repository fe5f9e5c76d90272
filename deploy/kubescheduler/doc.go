// Package kubescheduler holds the kube-scheduler configuration fleetflow recommends for GPU workload
// clusters: NodeResourcesFit scores MostAllocated, so kube-scheduler packs pods onto the fullest node that
// fits, as fleetflow packs gangs, instead of spreading them (docs/performance.md, "Fit that kube-scheduler
// agrees with"). The local fleet runs it with Options.SchedulerScoring = MostAllocated.
package kubescheduler
