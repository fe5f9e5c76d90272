package schemas

// CloudEvent type names. The version suffix changes only when a payload changes incompatibly.
const (
	TypeWorkloadChanged  = "io.fleetflow.workload.changed.v1"
	TypeWorkloadDeleted  = "io.fleetflow.workload.deleted.v1"
	TypePlacementDecided = "io.fleetflow.placement.decided.v1"
	TypePlacementApplied = "io.fleetflow.placement.applied.v1"
	TypePlacementFailed  = "io.fleetflow.placement.failed.v1"
	TypePlacementVerdict = "io.fleetflow.placement.verdict.v1"
	TypeWorkloadAnalyzed = "io.fleetflow.workload.analyzed.v1"

	// Control-plane configuration; payloads are ObjectChanged / ObjectDeleted.
	TypePolicyChanged            = "io.fleetflow.policy.changed.v1"
	TypePolicyDeleted            = "io.fleetflow.policy.deleted.v1"
	TypeResourceInterfaceChanged = "io.fleetflow.resourceinterface.changed.v1"
	TypeResourceInterfaceDeleted = "io.fleetflow.resourceinterface.deleted.v1"
	TypeClusterChanged           = "io.fleetflow.cluster.changed.v1"
	TypeClusterDeleted           = "io.fleetflow.cluster.deleted.v1"
	TypeNamespaceChanged         = "io.fleetflow.namespace.changed.v1"
	TypeNamespaceDeleted         = "io.fleetflow.namespace.deleted.v1"

	// Workload-cluster observations.
	TypeNodeChanged      = "io.fleetflow.node.changed.v1"
	TypeNodeDeleted      = "io.fleetflow.node.deleted.v1"
	TypeClusterHeartbeat = "io.fleetflow.cluster.heartbeat.v1"
	TypeClusterAPIs      = "io.fleetflow.cluster.apis.v1"
	TypeWorkloadStatus   = "io.fleetflow.workload.status.v1"

	// TypePlacerTick is the placer's clock, published into its own input so that time-based decisions
	// (heartbeat timeouts, pods pending too long, reservation expiry) are events: ordered, replayable, audited.
	TypePlacerTick = "io.fleetflow.placer.tick.v1"
	// TypePlacerLeader records a placer taking the lease, on the fence subject of each stream it publishes to:
	// its publishes are stored only while that record is the last one there (see FenceSubject).
	TypePlacerLeader = "io.fleetflow.placer.leader.v1"
)

// TypePrefix starts every fleetflow event type: a reader meeting one it does not know (KnownType) reads a
// history of another schema version.
const TypePrefix = "io.fleetflow."

// KnownType reports whether eventType is one this build reads.
func KnownType(eventType string) bool {
	_, ok := payloadFactories[eventType]
	return ok
}

// Sources name who published an event, as CloudEvents "source" URI references.
const (
	SourceControlPlaneProducer = "/fleetflow/producer/control-plane"
	SourcePlacer               = "/fleetflow/placer"
)

// SourceClusterProducer is the CloudEvents source of the producer watching a workload cluster.
func SourceClusterProducer(cluster string) string { return "/fleetflow/producer/cluster/" + cluster }

// SourceApplier is the CloudEvents source of the applier for cluster.
func SourceApplier(cluster string) string { return "/fleetflow/applier/" + cluster }
