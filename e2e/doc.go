// Package e2e holds fleetflow's end-to-end tests: real kube-apiservers (one per cluster, sharing one
// etcd) started by localfleettest, real embedded JetStream, and the real producer, placer and appliers.
// Tests skip with a message when the apiserver binaries are missing, except under CI=true.
package e2e
