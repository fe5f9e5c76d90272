// Package placementtest holds fixture builders and a Harness for tests of the placement core: a real store
// (the read side) and a StorePlanner that records plans (the write side), as Nomad's scheduler tests do.
package placementtest
