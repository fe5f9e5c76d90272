// Package lifecycle turns recorded events into placement verdicts and decisions: the rules of a workload's
// life across the fleet, over the go-memdb view of placement/state and the cycles of placement/scheduler.
//
// Its input is an Event (a schemas payload with its subject, sequence and times); its output is Effects
// (verdicts, Apply and Delete decisions) and what the fleet forgot (TakeGone, TakeGoneFleet). It reads no
// clock, starts no goroutine and does no I/O, so the same events in the same order give the same effects
// (save for a user RI whose analysis is cut by the Karta engine's time bounds): the live placer
// (consumers/placer) and a replay of the history (consumers/replay) run the same Controller.
//
// The rules, each with its reason, are listed in docs/architecture.md ("Lifecycle rules").
package lifecycle
