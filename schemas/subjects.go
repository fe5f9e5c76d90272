package schemas

import (
	"fmt"
	"strings"
)

// Subject layout. Every token that comes from a Kubernetes name is escaped with Token, so a subject always
// has the same number of tokens and wildcards can select by position:
//
//	fleetflow.events.workload.<group>.<kind>.<namespace>.<name>       workload changed / deleted
//	fleetflow.events.placement.<cluster>.<group>.<kind>.<namespace>.<name>   applied / failed
//	fleetflow.decisions.<cluster>.<group>.<kind>.<namespace>.<name>   placement decided
const (
	SubjectRoot          = "fleetflow"
	SubjectEventsPrefix  = SubjectRoot + ".events"
	SubjectDecisionsRoot = SubjectRoot + ".decisions"

	// SubjectAllEvents selects every input event of the EVENTS stream.
	SubjectAllEvents = SubjectEventsPrefix + ".>"
	// SubjectAllDecisions selects everything of the DECISIONS stream: every cluster's decisions, and the placers'
	// leadership records on its fence subject (SubjectFenceDecisions).
	SubjectAllDecisions = SubjectDecisionsRoot + ".>"
	// SubjectClusterDecisions selects every cluster's decisions and nothing else.
	SubjectClusterDecisions = SubjectDecisionsRoot + ".*.>"
	// SubjectAllWorkloadEvents selects workload changed and deleted events.
	SubjectAllWorkloadEvents = SubjectEventsPrefix + ".workload.>"
	// SubjectStateEvents selects the events whose last value is kept as state: all of them, since every
	// event subject names one object or one aspect of a cluster.
	SubjectStateEvents = SubjectEventsPrefix + ".>"
)

// IsDecision reports whether subject is a decision's, one of the decisions stream's.
func IsDecision(subject string) bool {
	return strings.HasPrefix(subject, SubjectDecisionsRoot+".")
}

// SubjectMatches reports whether the NATS subject filter selects subject, token by token: "*" stands for any
// one token, and a last ">" for one or more.
func SubjectMatches(filter, subject string) bool {
	for {
		want, filterRest, filterMore := strings.Cut(filter, ".")
		if want == ">" {
			return true // subject still holds a token: the loop goes on only while it has more
		}
		token, subjectRest, subjectMore := strings.Cut(subject, ".")
		if want != "*" && want != token {
			return false
		}
		if !filterMore || !subjectMore {
			return filterMore == subjectMore
		}
		filter, subject = filterRest, subjectRest
	}
}

// coreGroupToken stands for the empty (core) API group, which cannot be an empty subject token.
const coreGroupToken = "core"

// clusterScopedToken stands for the namespace of a cluster-scoped object.
const clusterScopedToken = "_"

// Token escapes a Kubernetes name or group for use as one subject token. Kubernetes names never contain
// '_', so mapping '.' to '_' is reversible and keeps names with dots in a single token.
func Token(s string) string { return strings.ReplaceAll(s, ".", "_") }

// UntokenKey reverses Token.
func UntokenKey(s string) string { return strings.ReplaceAll(s, "_", ".") }

func objectTokens(ref ObjectRef) string {
	group := ref.Group()
	if group == "" {
		group = coreGroupToken
	}
	ns := ref.Namespace
	if ns == "" {
		ns = clusterScopedToken
	}
	return fmt.Sprintf("%s.%s.%s.%s", Token(group), Token(ref.Kind), Token(ns), Token(ref.Name))
}

// WorkloadSubject is where changes of one control-plane workload are published.
func WorkloadSubject(ref ObjectRef) string {
	return SubjectEventsPrefix + ".workload." + objectTokens(ref)
}

// PlacementSubject is where an applier reports the outcome of a decision for one workload on its cluster.
func PlacementSubject(cluster string, ref ObjectRef) string {
	return SubjectEventsPrefix + ".placement." + Token(cluster) + "." + objectTokens(ref)
}

// PolicySubject is where changes of one SchedulePolicy are published ("_" as namespace when cluster-scoped).
func PolicySubject(ref ObjectRef) string { return SubjectEventsPrefix + ".policy." + objectTokens(ref) }

// ResourceInterfaceSubject is where changes of one ResourceInterface are published.
func ResourceInterfaceSubject(ref ObjectRef) string {
	return SubjectEventsPrefix + ".resourceinterface." + objectTokens(ref)
}

// NamespaceSubject is where changes of one control-plane namespace are published.
func NamespaceSubject(name string) string { return SubjectEventsPrefix + ".namespace." + Token(name) }

// ClusterSpecSubject carries the control-plane Cluster object. Each cluster has one subject per aspect
// (spec, heartbeat, apis), so each aspect keeps its own last value.
func ClusterSpecSubject(cluster string) string {
	return SubjectEventsPrefix + ".cluster." + Token(cluster) + ".spec"
}

// ClusterHeartbeatSubject carries a workload cluster's heartbeats.
func ClusterHeartbeatSubject(cluster string) string {
	return SubjectEventsPrefix + ".cluster." + Token(cluster) + ".heartbeat"
}

// ClusterAPIsSubject carries a workload cluster's installed APIs.
func ClusterAPIsSubject(cluster string) string {
	return SubjectEventsPrefix + ".cluster." + Token(cluster) + ".apis"
}

// NodeSubject carries one node's state.
func NodeSubject(cluster, node string) string {
	return SubjectEventsPrefix + ".node." + Token(cluster) + "." + Token(node)
}

// ClusterOfNodeSubject is the cluster a NodeSubject names, and whether subject is one.
func ClusterOfNodeSubject(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, SubjectEventsPrefix+".node.")
	if !ok {
		return "", false
	}
	cluster, node, ok := strings.Cut(rest, ".")
	if !ok || cluster == "" || node == "" {
		return "", false
	}
	return UntokenKey(cluster), true
}

// WorkloadStatusSubject carries a placed workload's status in one cluster.
func WorkloadStatusSubject(cluster string, ref ObjectRef) string {
	return SubjectEventsPrefix + ".status." + Token(cluster) + "." + objectTokens(ref)
}

// VerdictSubject carries the placer's verdicts on one workload.
func VerdictSubject(ref ObjectRef) string {
	return SubjectEventsPrefix + ".verdict." + objectTokens(ref)
}

// AnalysisSubject carried analyses as events of their own, before they moved into verdicts; audit reads
// that history through it.
func AnalysisSubject(ref ObjectRef) string {
	return SubjectEventsPrefix + ".analysis." + objectTokens(ref)
}

// WorkloadFilters are subject filters that select every event and decision about one workload, for
// auditors; group "" matches any group.
func WorkloadFilters(group, kind, namespace, name string) []string {
	g := "*"
	if group != "" {
		g = Token(group)
	}
	ns := clusterScopedToken
	if namespace != "" {
		ns = Token(namespace)
	}
	return workloadFilters(g + "." + Token(kind) + "." + ns + "." + Token(name))
}

// WorkloadStateFilters are subject filters that select every subject about one workload, as WorkloadFilters
// do, for exactly ref's group: what the state stream keeps of a workload.
func WorkloadStateFilters(ref ObjectRef) []string { return workloadFilters(objectTokens(ref)) }

func workloadFilters(obj string) []string {
	return []string{
		SubjectEventsPrefix + ".workload." + obj,
		SubjectEventsPrefix + ".analysis." + obj,
		SubjectEventsPrefix + ".verdict." + obj,
		SubjectEventsPrefix + ".placement.*." + obj,
		SubjectEventsPrefix + ".status.*." + obj,
		SubjectDecisionsRoot + ".*." + obj,
	}
}

// ClusterStateFilters are subject filters that select every subject about one workload cluster: its aspects
// (spec, heartbeat, installed APIs), its nodes, and the statuses, applier reports and decisions of the
// workloads on it.
func ClusterStateFilters(cluster string) []string {
	c := Token(cluster)
	return []string{
		ClusterAspectsFilter(cluster),
		SubjectEventsPrefix + ".node." + c + ".*",
		SubjectEventsPrefix + ".status." + c + ".>",
		SubjectEventsPrefix + ".placement." + c + ".>",
		SubjectDecisionsRoot + "." + c + ".>",
	}
}

// ClusterAspectsFilter selects the subjects of one workload cluster's aspects: its spec, heartbeat and
// installed APIs.
func ClusterAspectsFilter(cluster string) string {
	return SubjectEventsPrefix + ".cluster." + Token(cluster) + ".*"
}

// SubjectPlacerTick carries the placer's clock ticks.
const SubjectPlacerTick = SubjectEventsPrefix + ".placer.tick"

// DecisionSubject is where decisions for one workload on one cluster are published.
func DecisionSubject(cluster string, ref ObjectRef) string {
	return SubjectDecisionsRoot + "." + Token(cluster) + "." + objectTokens(ref)
}

// ClusterDecisionsFilter selects every decision addressed to cluster.
func ClusterDecisionsFilter(cluster string) string {
	return SubjectDecisionsRoot + "." + Token(cluster) + ".>"
}
