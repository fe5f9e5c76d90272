// Package placer is the JetStream side of the placement lifecycle (placement/lifecycle): it decodes each
// delivery into a lifecycle.Event, skips what it already applied, hands it to the Controller, publishes the
// effects, and commits them once the streams stored them. On a restart it rebuilds the controller's view from
// the state stream and the events stream's history.
package placer
