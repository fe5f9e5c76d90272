// Package bustest owns test helpers around NATS: a proxy between clients and a server that loses pull
// requests, so tests can show that consumers recover when no request waits at the server, and an embedded
// JetStream with fleetflow's streams.
package bustest
