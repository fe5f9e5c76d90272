package schemas

// Labels that tie an object in a workload cluster to its control-plane workload. The applier sets them on
// every object it places; the cluster producer selects placed objects by them and maps pods back to their
// workload through them.
const (
	// LabelManagedBy marks objects fleetflow created; the applier never deletes or overwrites others.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByFleetflow is the value of LabelManagedBy on objects fleetflow placed.
	ManagedByFleetflow = "fleetflow"
	// LabelWorkloadUID is the uid of the control-plane workload the object copies.
	LabelWorkloadUID = "fleetflow.io/workload-uid"
	// AnnotationSourceGeneration and AnnotationSourceContent, on a copy, are the control-plane workload's
	// metadata.generation and content hash it was applied from: the copy's own generation counts its own
	// changes, so its status.observedGeneration says nothing of the control plane's until translated with
	// them (see WorkloadStatus).
	AnnotationSourceGeneration = "fleetflow.io/source-generation"
	AnnotationSourceContent    = "fleetflow.io/source-content"
)

// ManagedSelector selects the objects fleetflow placed in a workload cluster.
const ManagedSelector = LabelManagedBy + "=" + ManagedByFleetflow
