// Package bustest owns test helpers that stand between NATS clients and a server: a proxy that loses pull
// requests, so tests can show that consumers recover when no request waits at the server.
package bustest
