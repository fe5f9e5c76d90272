package lifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/policy"
	"github.com/fleetflow/fleetflow/schemas"
)

type workloadEntry struct {
	id  string
	ref schemas.ObjectRef
	// objectJSON is the control-plane object as last received, encoded: kept as bytes rather than the
	// decoded map because bytes cost the collector nothing to scan (a fleet's workloads were a quarter of
	// the placer's heap as maps) and decisions embed them as they are. nil once the workload is deleted.
	objectJSON []byte
	// content identifies what an applier copies of the object (contentOf), computed on first use (see
	// contentKey); resourceVersion and generation are the object's.
	content         string
	resourceVersion string
	generation      int64
	labels          map[string]string
	// analysis is nil when the workload could not be analyzed; analysisErr says why.
	analysis    *karta.Analysis
	analysisErr string
	// verdictAnalysis is the analysis as verdicts carry it, shared by every verdict until the next analysis
	// (payloads are never modified once sent); verdictAnalysisKey identifies it (analysisKey).
	verdictAnalysis    *schemas.Analysis
	verdictAnalysisKey string
	// pendingSince is when the workload's pods started pending on its cluster, zero when none pend.
	pendingCluster string
	pendingSince   time.Time
	// deleted is set once the control plane deleted the workload; the entry goes once the Deletes of its
	// copies are sent, and comes back if an applier gives up on one (see onFailed).
	deleted bool
	// restore is the newest verdict read while rebuilding (on its own or carried by an Apply), which says
	// where the workload was placed; newestApply is the newest Apply read, which says so when the Apply that
	// carried the verdict gave way to a later one in the state stream. Both are used only while rebuilding.
	restore     *schemas.PlacementVerdict
	newestApply *appliedPlacement
	// restoreAt is when the stream stored restore (or the Apply that carried it), by the server's clock: a
	// restored placement holds its reservation again until that time plus the reservation TTL.
	restoreAt time.Time
}

// appliedPlacement is what an Apply read while rebuilding says about where its workload is placed.
type appliedPlacement struct {
	sequence uint64
	// at is when the stream stored the Apply.
	at            time.Time
	epoch, policy string
	clusters      []string
	avoid         map[string]string
	// object is the object the Apply carried, kept only for an Apply stored less than a reservation TTL before
	// it was read: a workload placed nowhere now keeps the reservation of the copy it keeps running, which is
	// this version's, not the one it has now (restoreKeptReservation).
	object map[string]any
}

type clusterEntry struct {
	name string
	// registered is true once the control plane has a Cluster object for it.
	registered bool
	labels     map[string]string
	taints     []corev1.Taint
	// invalid says why the Cluster object is invalid, "" when it is not (structs.Cluster.Invalid).
	invalid       string
	apis          []string
	lastHeartbeat time.Time
	ready         bool
	// changedAt is the sequence of the last event that changed the cluster in a way that may let an Apply given
	// up on there go through now (clusterChanged).
	changedAt uint64
}

type policyEntry struct {
	name     string
	compiled *policy.Policy
	err      error
	// refused is the version refused with err, kept to compile again when an RI changes what it may name (a
	// Divide over a kind whose RI is applied after the policy, as `kubectl apply -f dir/` orders them).
	refused *v1alpha1.SchedulePolicy
	// object is where the policy's versions are in the events stream: its subject and UID.
	object refusedObject
}

// refusedObject locates an object's versions in the events stream's history.
type refusedObject struct {
	subject, uid string
}
