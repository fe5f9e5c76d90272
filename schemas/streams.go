package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Stream names.
const (
	// StreamEvents holds every input event (workloads, and later nodes, clusters, policies, RIs) and the
	// appliers' outcome reports, as history kept for a configurable age.
	StreamEvents = "FLEETFLOW_EVENTS"
	// StreamDecisions holds the placer's decisions on per-cluster subjects.
	StreamDecisions = "FLEETFLOW_DECISIONS"
	// StreamState keeps the last message of every subject of EVENTS and DECISIONS, with no age limit: the
	// latest state of every node, workload, policy, cluster and placement. A restarted placer rebuilds its
	// whole view from it. It is filled by JetStream sourcing, so producers publish once. Each source starts
	// at the first sequence of its origin: without a start, a source that has copied nothing yet when its
	// consumer is set up (the streams were just created, or the server restarted) starts at the time of the
	// state stream's last message once that stream has dropped its first one, which a newer message on the
	// same subject does, and so skips everything its origin held before.
	StreamState = "FLEETFLOW_STATE"
	// StreamDead holds dead letters: the messages a durable consumer gave up on (see deadletters.go), kept
	// for a bounded time for operators to read and republish by hand.
	StreamDead = "FLEETFLOW_DEAD"
)

// LeaseBucket is the JetStream key-value bucket of leases: a singleton part (the placer) works only while
// it holds its key.
const LeaseBucket = "fleetflow_leases"

// LeasePlacer is the placer's lease key.
const LeasePlacer = "placer"

// Durable consumer names.
const (
	ConsumerPlacer = "placer"
	ConsumerStatus = "status"
	// ConsumerStatusDecisions is the status writer's consumer of decisions, for the Placed verdicts they carry.
	ConsumerStatusDecisions = "status-decisions"
)

// ApplierConsumerName is the durable consumer of one cluster's applier; replicas of that applier share it. A
// cluster's name may be 253 characters long, and JetStream keeps a consumer's state in a directory of its
// name (255 at most): past maxConsumerName the name keeps its start and ends with a hash of the whole.
func ApplierConsumerName(cluster string) string {
	name := "applier-" + Token(cluster)
	if len(name) <= maxConsumerName {
		return name
	}
	sum := sha256.Sum256([]byte(cluster))
	hash := hex.EncodeToString(sum[:8])
	return name[:maxConsumerName-len(hash)-1] + "-" + hash
}

// maxConsumerName bounds the durable consumer names fleetflow makes.
const maxConsumerName = 200

// MaxDeliver bounds how often a message is offered, so nothing is retried forever. Consumers space out
// retries themselves with NakWithDelay (RetryDelay), because a server-side BackOff would also shorten the
// ack wait of a slow but healthy first attempt.
const MaxDeliver = 8

// RetryDelay is the pause before delivery attempt+1 of a message whose handling failed on attempt.
func RetryDelay(attempt uint64) time.Duration {
	delay := 500 * time.Millisecond
	for i := uint64(1); i < attempt && delay < 30*time.Second; i++ {
		delay *= 2
	}
	return min(delay, 30*time.Second)
}

// PlacerInputs are the subjects the placer consumes: every input event, but not its own verdicts and
// analyses.
var PlacerInputs = []string{
	SubjectEventsPrefix + ".workload.>",
	SubjectEventsPrefix + ".policy.>",
	SubjectEventsPrefix + ".resourceinterface.>",
	SubjectEventsPrefix + ".namespace.>",
	SubjectEventsPrefix + ".cluster.>",
	SubjectEventsPrefix + ".node.>",
	SubjectEventsPrefix + ".status.>",
	SubjectEventsPrefix + ".placement.>",
	SubjectEventsPrefix + ".placer.>",
}

// IsPlacerInput reports whether the placer consumes subject: whether a filter of PlacerInputs selects it.
func IsPlacerInput(subject string) bool {
	for _, filter := range PlacerInputs {
		if SubjectMatches(filter, subject) {
			return true
		}
	}
	return false
}

// StatusFleetSubjects are what every status writer reads whole, each replica for itself (from the state
// stream, not on its shared durable consumer): cluster heartbeats, APIs, specs and nodes (summed into Cluster
// status), ticks (a silent cluster turning NotReady), and RIs (whose statusMappings give the phase). Shared
// out between replicas, each would know only some of a cluster's nodes and RIs, and their Cluster statuses
// and phases would flip between their partial views.
var StatusFleetSubjects = []string{
	SubjectEventsPrefix + ".resourceinterface.>",
	SubjectEventsPrefix + ".cluster.>",
	SubjectEventsPrefix + ".node.>",
	SubjectPlacerTick,
}
