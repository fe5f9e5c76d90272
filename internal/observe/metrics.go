package observe

import (
	"sync/atomic"

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
	// DeadLetters counts the messages each durable consumer gave up on as poison, by reason (schemas.DeadReasons):
	// stored in the dead-letter stream, or, when that failed, counted in DeadLetterErrors too.
	DeadLetters = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "dead_letters_total",
		Help: "Messages a durable consumer gave up on and sent to the dead-letter stream, by reason " +
			"(undecodable, invalid, permanent, exhausted, panic)."}, []string{"consumer", "reason"})
	// DeadLetterErrors counts the dead letters that could not be stored; their messages were terminated anyway,
	// so that one poison message never holds up the ones behind it, and only the log keeps them.
	DeadLetterErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "dead_letter_errors_total",
		Help: "Dead letters the dead-letter stream did not store (the message was terminated anyway)."}, []string{"consumer"})
	// PlacerLeader is 1 while this process's placer holds the lease and places, 0 while it stands by.
	PlacerLeader = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "placer_leader",
		Help: "1 while this process's placer holds the placer lease."})
	// Verdicts counts the placer's verdicts by status (Placed, Unschedulable, NoPolicy, Invalid).
	Verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "placer_verdicts_total",
		Help: "Verdicts the placer reached, by status."}, []string{"status"})
	// Decisions counts the placer's decisions by action (apply, delete).
	Decisions = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "placer_decisions_total",
		Help: "Decisions the placer sent to workload clusters, by action."}, []string{"action"})
	// ApplierOperations counts what the appliers carried out, by cluster, operation (apply, delete) and outcome
	// (ok, failed).
	ApplierOperations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "applier_operations_total",
		Help: "Decisions the appliers carried out on their clusters, by operation and outcome."}, []string{"cluster", "operation", "outcome"})
	// KubeEvents counts the Kubernetes Events the status writer emitted, by reason and outcome: recorded (handed
	// to client-go's broadcaster, which may fold it into a series) or dropped (over the rate limit).
	KubeEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "kube_events_total",
		Help: "Kubernetes Events emitted on the control plane, by reason and outcome (recorded, dropped over the rate limit)."},
		[]string{"reason", "outcome"})
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
		EventsHandled, EventHandleSeconds, EventsPublished, PublishErrors, DeadLetters, DeadLetterErrors, PlacerLeader, Verdicts, Decisions,
		ApplierOperations, KubeEvents, consumerLag, fleetCollector{})
}

// FleetCounts is what the leading placer's view holds: workloads placed or not, registered clusters Ready or not.
type FleetCounts struct{ Placed, Unplaced, Ready, NotReady int }

// fleetSource counts the fleet when /metrics is read; nil while no placer leads in this process.
var fleetSource atomic.Pointer[func() FleetCounts]

// SetFleetSource makes /metrics count the fleet with count, read from an immutable view when the metrics are
// scraped rather than on the placer's goroutine; nil reports zeros (no placer leads here).
func SetFleetSource(count func() FleetCounts) {
	if count == nil {
		fleetSource.Store(nil)
		return
	}
	fleetSource.Store(&count)
}

var (
	fleetWorkloadsDesc = prometheus.NewDesc(namespace+"_placer_workloads",
		"Workloads the leading placer knows, by whether they are placed (0 where no placer leads).", []string{"placed"}, nil)
	fleetClustersDesc = prometheus.NewDesc(namespace+"_placer_clusters",
		"Registered clusters the leading placer knows, by whether they are Ready (0 where no placer leads).", []string{"ready"}, nil)
)

// fleetCollector reports FleetCounts at each scrape.
type fleetCollector struct{}

func (fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fleetWorkloadsDesc
	ch <- fleetClustersDesc
}

func (fleetCollector) Collect(ch chan<- prometheus.Metric) {
	var counts FleetCounts
	if count := fleetSource.Load(); count != nil {
		counts = (*count)()
	}
	ch <- prometheus.MustNewConstMetric(fleetWorkloadsDesc, prometheus.GaugeValue, float64(counts.Placed), "true")
	ch <- prometheus.MustNewConstMetric(fleetWorkloadsDesc, prometheus.GaugeValue, float64(counts.Unplaced), "false")
	ch <- prometheus.MustNewConstMetric(fleetClustersDesc, prometheus.GaugeValue, float64(counts.Ready), "true")
	ch <- prometheus.MustNewConstMetric(fleetClustersDesc, prometheus.GaugeValue, float64(counts.NotReady), "false")
}
