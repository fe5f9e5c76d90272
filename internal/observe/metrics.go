package observe

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry holds the process's metrics: Go's runtime, the process's own, and fleetflow's below.
var Registry = prometheus.NewRegistry()

const namespace = "fleetflow"

var (
	// EventsHandled counts the events each durable consumer handled, by CloudEvents type and outcome: ok,
	// retried (the handler failed and the event comes again), gave_up (terminated after its last attempt or a
	// permanent error), invalid (not a fleetflow event; terminated unread).
	EventsHandled = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_handled_total",
		Help: "Events handled by each durable consumer, by CloudEvents type and outcome (ok, retried, gave_up, invalid)."},
		[]string{"consumer", "type", "outcome"})
	// EventHandleSeconds is how long a consumer's handler took per event (the placer's: its whole cycle).
	EventHandleSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "event_handle_seconds",
		Help:    "Time a durable consumer's handler took per event.",
		Buckets: prometheus.ExponentialBuckets(25e-6, 4, 10)}, []string{"consumer"})
	// EventsPublished counts events stored in the streams, by type; an event published again with the same
	// id (a retried batch) counts again though the stream keeps one.
	EventsPublished = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_published_total",
		Help: "Events published to the streams, by CloudEvents type."}, []string{"type"})
	// PublishErrors counts publishes the streams did not acknowledge, by type.
	PublishErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "publish_errors_total",
		Help: "Publishes the streams refused or did not acknowledge, by CloudEvents type."}, []string{"type"})
	// PlacerLeader is 1 while this process's placer holds the lease and places, 0 while it stands by.
	PlacerLeader = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "placer_leader",
		Help: "1 while this process's placer holds the placer lease."})
	// Verdicts counts the placer's verdicts by status (Placed, Unschedulable, NoPolicy, Invalid).
	Verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "placer_verdicts_total",
		Help: "Verdicts the placer reached, by status."}, []string{"status"})
	// Decisions counts the placer's decisions by action (apply, delete).
	Decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "placer_decisions_total",
		Help: "Decisions the placer sent to workload clusters, by action."}, []string{"action"})
	// FleetWorkloads is how many workloads the leading placer knows, by whether they are placed, as of its last
	// tick (every 2 s); FleetClusters how many registered clusters, by whether they are Ready. Both go back to
	// 0 when the placer stops leading, so only the leader's series count.
	FleetWorkloads = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "placer_workloads",
		Help: "Workloads the leading placer knows, by whether they are placed."}, []string{"placed"})
	FleetClusters = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "placer_clusters",
		Help: "Registered clusters the leading placer knows, by whether they are Ready."}, []string{"ready"})
	// ApplierOperations counts what the appliers carried out, by cluster, operation (apply, delete) and outcome
	// (ok, failed).
	ApplierOperations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "applier_operations_total",
		Help: "Decisions the appliers carried out on their clusters, by operation and outcome."}, []string{"cluster", "operation", "outcome"})
)

func init() {
	// Series that exist before their first event, so a rate() or an alert on them has something to read.
	for _, status := range []string{"Placed", "Unschedulable", "NoPolicy", "Invalid"} {
		Verdicts.WithLabelValues(status)
	}
	for _, action := range []string{"Apply", "Delete"} {
		Decisions.WithLabelValues(action)
	}
	Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		EventsHandled, EventHandleSeconds, EventsPublished, PublishErrors, PlacerLeader, Verdicts, Decisions,
		FleetWorkloads, FleetClusters, ApplierOperations, consumerLag)
	ResetFleet()
}

// ResetFleet sets the fleet gauges to 0: a placer that is not leading counts nothing.
func ResetFleet() {
	for _, v := range []string{"true", "false"} {
		FleetWorkloads.WithLabelValues(v).Set(0)
		FleetClusters.WithLabelValues(v).Set(0)
	}
}
