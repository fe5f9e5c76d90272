// Package bustest owns test helpers that stand between NATS clients and a server: a proxy that loses pull
// requests, as a server or a client can without a word, so tests can show that consumers recover.
package bustest
