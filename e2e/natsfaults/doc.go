// Package natsfaults runs the pipeline on a three-node JetStream cluster (streams at 3 replicas) and kills a
// NATS node with SIGKILL in the middle of a burst of workloads, then starts it again: nothing may be lost,
// placed twice or applied twice, and the run must converge. It has a package of its own because its TestMain
// must let the test binary run as a NATS node (natscluster.RunNodeIfAsked) and seeds a fleet sized for the burst.
package natsfaults
