// Package natscluster runs a real JetStream cluster on loopback, each node a separate OS process, so that a
// test (or a chaos run) can kill a node with SIGKILL and start it again on the same store and ports, as a
// production node dies and comes back. WithHosts runs each node in a network namespace of its own instead
// (internal/netlab), so that a test can cut one off from its peers and clients, as a partition would, and heal it.
//
// A node is the calling binary re-executed with its configuration in an environment variable: the binary's
// main (a test package's TestMain) calls RunNodeIfAsked first, which in a node process runs the server and
// never returns, and elsewhere returns at once. This is how nats-server's own tests run servers out of process
// without a separate executable.
package natscluster
