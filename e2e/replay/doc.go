// Package replay is the end-to-end test of `fleetflow replay`, `audit export` and `explain`: a run on a local
// fleet is recorded in the streams, replayed from them and from an exported file with NATS stopped, and a
// what-if of a policy change is checked against applying that change for real.
package replay
