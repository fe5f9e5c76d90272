// Package netlab puts processes in network namespaces of their own, joined by veth pairs to one bridge in the
// root namespace, so that a test can cut a process off the network (and heal it) while it runs: a partition,
// not a crash. It needs root and ip(8); where a namespace cannot be made, New says why and a test skips.
//
// The test process stays in the root namespace and reaches every host through the bridge, like any peer. It can
// also open connections from inside a host's namespace (Host.DialContext), which keep working while the host is
// cut off: how a test watches a cut-off process, and talks to it as a client on its side of the partition would.
package netlab
