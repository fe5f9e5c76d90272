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
	// published holds the last decision published per cluster.
	published map[string]publishedDecision
	// confirmed holds the sequence of the last decision each cluster's applier reported applied.
	confirmed map[string]uint64
	// pendingSince is when the workload's pods started pending on its cluster, zero when none pend.
	pendingCluster string
	pendingSince   time.Time
	// avoid maps clusters the workload is being moved off to why: its pods stayed Pending there, or it
	// failed there, or could not be applied there, under a policy that reschedules on failure.
	avoid map[string]string
	// applyFailed maps clusters whose applier gave up on the workload's Apply to that failure, while it is
	// the last decision published for the cluster: under a policy that reschedules on failure the workload
	// moves off as soon as another cluster fits (see leaveFailedApplies).
	applyFailed map[string]failedApply
	// lastVerdict identifies the last verdict published, to avoid repeating identical verdicts.
	lastVerdict string
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
	// redelete lists clusters whose applier gave up on a Delete (the cluster was down): the copy may
	// still be there, so the Delete is sent again once the cluster is Ready.
	redelete map[string]bool
	// reapply holds the clusters whose applier gave up on the workload's last Apply there; set true once the
	// cluster changed since (Ready again, new APIs, labels or taints), or FailedApplyRetry passed, which has the
	// Apply sent again the next time the workload is placed there: a cluster that did not answer for a while,
	// lacked the kind, refused it by RBAC, a webhook or an older CRD may take it now. A workload placed where its
	// Apply failed would otherwise keep its earlier version there for good. Not sent again sooner, or a refused
	// Apply would come back every minute.
	reapply map[string]bool
	// finished lists clusters whose copy last reported a Completed or Failed phase: such a copy that goes
	// (a TTL after finishing, a user's cleanup) is not applied again, which would run the job again.
	finished map[string]bool
	// completed lists clusters whose copy last reported Completed: a job that ran to its end there, which
	// re-evaluation leaves where it is (completedEverywhere).
	completed map[string]bool
	// reapplied is when a copy deleted in its cluster was last applied again, per cluster, to hold back a
	// loop with something that keeps deleting it.
	reapplied map[string]time.Time
}

type publishedDecision struct {
	action   schemas.DecisionAction
	sequence uint64
	// uid is the uid of the workload the decision was for. An entry goes on with a workload created again under
	// its name, and a copy of the earlier one may still stand (its Delete was given up on while its cluster was
	// down): that copy's Delete must name its uid, the applier deleting only the copies of the uid it is given,
	// and it is no Apply of the new workload. "" for decisions recorded before it was kept.
	uid string
	// object is the control-plane object the decision applied (before a Divide's share of replicas), the
	// same bytes as its workload's objectJSON then. content identifies what an applier copies of it
	// (contentOf), so a new resourceVersion that changed nothing to copy (fleetflow's own annotations,
	// status) publishes no new decision. The content is hashed only when an object arrives that is not
	// those very bytes: most workloads are decided once, and hashing cost about a tenth of the placer's
	// time per workload. A decision read back while rebuilding has its content and no object.
	object   []byte
	content  string
	replicas int64
	// namespaceLabels are the namespace labels an Apply carried (namespaceLabelsKey), for a restarted placer to
	// tell which namespaces were relabelled while none ran.
	namespaceLabels string
}

// failedApply is an Apply an applier gave up on: its decision sequence, the API error, and when the placer
// learnt of it (its clock then, the stream's time of the report; zero when it had none yet, in which case the
// next tick stamps it), from which FailedApplyRetry counts.
type failedApply struct {
	sequence uint64
	err      string
	at       time.Time
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
