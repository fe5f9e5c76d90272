package structs

import "time"

// CopyAction is what the last decision for a copy told its cluster's applier to do.
type CopyAction string

// The decisions' actions, as the decisions name them.
const (
	CopyApply  CopyAction = "Apply"
	CopyDelete CopyAction = "Delete"
)

// Copy is what placement knows of a workload's copy on one cluster: the last decision it published for it, and
// what the cluster's applier and producer reported since. A stored Copy is never modified: change a copy of the
// value and store that.
type Copy struct {
	WorkloadID, Cluster string
	// Published is the last decision published for the cluster; its Action is "" when none was.
	Published Published
	// Confirmed is the sequence of the last decision the cluster's applier reported applied.
	Confirmed uint64
	// Failed is the Apply the cluster's applier gave up on, while it is the last decision published there;
	// its Sequence is 0 when none failed.
	Failed FailedApply
	// Redelete is set when the applier gave up on a Delete (the cluster was down): the copy may still be
	// there, so the Delete is sent again once the cluster is Ready.
	Redelete bool
	// Reapply says whether an Apply the applier gave up on is sent again the next time the workload is placed
	// there; one that waits is due once its cluster changed after ReapplyAfter, the sequence of the report.
	Reapply      Reapply
	ReapplyAfter uint64
	// Finished and Completed are set when the copy last reported a Completed or Failed phase (Finished), or
	// Completed alone: a finished copy that goes is not applied again, and a completed one stays where it is.
	Finished, Completed bool
	// Reapplied is when the copy, deleted in its cluster, was last applied again; zero when never.
	Reapplied time.Time
}

// Empty reports whether the copy holds nothing to remember, so its row can go.
func (c *Copy) Empty() bool {
	return c.Published.Action == "" && c.Confirmed == 0 && c.Failed.Sequence == 0 && !c.Redelete &&
		c.Reapply == ReapplyNone && c.ReapplyAfter == 0 && !c.Finished && !c.Completed && c.Reapplied.IsZero()
}

// Applied reports whether the last decision for the copy is an Apply.
func (c *Copy) Applied() bool { return c.Published.Action == CopyApply }

// Published is a decision published for one cluster.
type Published struct {
	Action   CopyAction
	Sequence uint64
	// UID is the uid of the workload the decision was for: a workload created again under its name takes over
	// the name's copies, and a copy of the earlier one may still stand, whose Delete must name its uid. "" for
	// decisions recorded before it was kept.
	UID string
	// Object is the control-plane object an Apply applied (before a Divide's share of replicas), and Content
	// identifies what an applier copies of it, so a new resourceVersion that changed nothing to copy publishes
	// no new decision. Content is computed on first need; a decision read back while rebuilding has Content
	// and no Object.
	Object   []byte
	Content  string
	Replicas int64
	// NamespaceLabels are the namespace labels the Apply carried, as one key.
	NamespaceLabels string
	// Pins are the pins the Apply carried (PlacementDecided.Pins).
	Pins string
}

// FailedApply is an Apply an applier gave up on: its decision sequence, the API error, and when placement learnt
// of it (zero until the next tick stamps it).
type FailedApply struct {
	Sequence uint64
	Err      string
	At       time.Time
}

// Reapply is whether an Apply the applier gave up on is sent again.
type Reapply uint8

const (
	// ReapplyNone: no Apply there failed, or a later decision superseded it.
	ReapplyNone Reapply = iota
	// ReapplyWaits: it failed, and nothing has changed since that could make it succeed.
	ReapplyWaits
	// ReapplyDue: it failed, and the cluster changed since (or the retry interval passed): send it again.
	ReapplyDue
)
