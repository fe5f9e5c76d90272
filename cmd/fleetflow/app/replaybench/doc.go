// Package replaybench measures a replay (consumers/replay) of a synthetic history: the fleet of the pipeline
// benchmark registered, a policy, ticks and heartbeats, and a stream of PyTorchJob gangs with what the
// appliers and cluster producers report about them, each input handed to a live placer whose verdicts and
// decisions are recorded as the streams would store them. Only the replay of that history is timed.
// `fleetflow bench replay` prints what Run returns.
package replaybench
