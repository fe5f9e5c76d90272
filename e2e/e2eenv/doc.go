// Package e2eenv is the harness of fleetflow's end-to-end tests: one test's view of the package's real
// local fleet (from localfleettest) with the whole pipeline running in process on a fresh embedded
// JetStream, plus poll-until-true helpers. It is a package of its own so every e2e package shares it.
package e2eenv
