// Package natsauth gives each fleetflow part a NATS user of its own, an NKey, whose permissions allow only the
// subjects that part needs: a workload cluster's producer publishes only that cluster's node, status and
// cluster-aspect events, its applier reads only that cluster's decisions and reports only its placements,
// audit and the UI only read, and the placer and status writer do what they do.
//
// Permissions are subject lists the server enforces, so JetStream's API subjects are part of them: a consumer
// is created on $JS.API.CONSUMER.CREATE.<stream>.<consumer>.<filter>, a form the server checks against the
// consumer's filter, which is how an applier may create its own consumer but not one on another cluster's
// decisions; a last message is read by subject on $JS.API.DIRECT.GET.<stream>.<subject>. Each user's replies
// go to an inbox of its own (bus.InboxPrefix), the only one it may subscribe to.
//
// Users are made for a known set of clusters (Generate), served by the embedded server as they are
// (ServerUsers) or by an external one from a configuration block (ServerConfig), and used by the parts from
// their seed files (WriteSeeds, bus.ClientAuth.NkeyFile).
package natsauth
