package schemas

// CloudEvent type names. The version suffix changes only when a payload changes incompatibly.
const (
	TypeWorkloadChanged  = "io.fleetflow.workload.changed.v1"
	TypeWorkloadDeleted  = "io.fleetflow.workload.deleted.v1"
	TypePlacementDecided = "io.fleetflow.placement.decided.v1"
	TypePlacementApplied = "io.fleetflow.placement.applied.v1"
	TypePlacementFailed  = "io.fleetflow.placement.failed.v1"
)

// Sources name who published an event, as CloudEvents "source" URI references.
const (
	SourceControlPlaneProducer = "/fleetflow/producer/control-plane"
	SourcePlacer               = "/fleetflow/placer"
)

// SourceApplier is the CloudEvents source of the applier for cluster.
func SourceApplier(cluster string) string { return "/fleetflow/applier/" + cluster }
