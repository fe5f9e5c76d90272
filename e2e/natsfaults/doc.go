// Package natsfaults runs the pipeline on a three-node JetStream cluster (streams at 3 replicas) and, in the
// middle of a burst of workloads, kills a NATS node with SIGKILL and starts it again, or cuts a node off the
// network (each node in a network namespace of its own) and heals it: nothing may be lost, placed twice or
// applied twice, and the run must converge. It has a package of its own because its TestMain must let the test
// binary run as a NATS node (natscluster.RunNodeIfAsked) and seeds a fleet sized for the burst.
package natsfaults
