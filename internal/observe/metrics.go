package observe

import (
	"regexp"
	"slices"
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
	// permanent error), invalid (not a fleetflow event; terminated unread), refused (over a bound of its sender;
	// settled unread).
	EventsHandled = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "events_handled_total",
		Help: "Events handled by each durable consumer, by CloudEvents type and outcome (ok, retried, gave_up, invalid, refused)."},
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
			"(undecodable, invalid, permanent, exhausted, panic, refused)."}, []string{"consumer", "reason"})
	// NodeReportsRefused counts the node reports the placer refused unread, by cluster: over the cluster's
	// budget (lifecycle.ReportBudget).
	NodeReportsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "node_reports_refused_total",
		Help: "Node reports the placer refused unread because their cluster sent more than its budget, by cluster."}, []string{"cluster"})
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
	// PinnedPods counts the gated pods the pinners released, by cluster and outcome: pinned (to a packed node),
	// unpinned (no packed node left for it, or its copy has no pins) or failed (the update was refused; retried).
	PinnedPods = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "pinner_pods_total",
		Help: "Gated pods the pinners released, by cluster and outcome: pinned, unpinned or failed."}, []string{"cluster", "outcome"})
	// SubmitToPlacedSeconds is how long a workload change took to be placed: from the time the control-plane
	// producer stamped on the change to the placer's Placed verdict being stored. Only changes placed by the
	// cycle they start count; a workload that waits for room is counted by fleetflow_placer_unplaced_workloads.
	SubmitToPlacedSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "submit_to_placed_seconds",
		Help:    "Time from a workload change on the control plane to its Placed verdict being stored, for changes placed at once.",
		Buckets: latencyBuckets})
	// PlacedToAppliedSeconds is how long a decision took to be carried out: from the time the placer stamped on
	// it to its applier's write succeeding, by cluster and action.
	PlacedToAppliedSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "placed_to_applied_seconds",
		Help:    "Time from a placer decision to its applier carrying it out on the workload cluster, by cluster and action.",
		Buckets: latencyBuckets}, []string{"cluster", "action"})
	// KubeEvents counts the Kubernetes Events the status writer emitted, by reason and outcome: recorded (handed
	// to client-go's broadcaster, which may fold it into a series) or dropped (over the rate limit).
	KubeEvents = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "kube_events_total",
		Help: "Kubernetes Events emitted on the control plane, by reason and outcome (recorded, dropped over the rate limit)."},
		[]string{"reason", "outcome"})
)

// latencyBuckets span 5 ms to about 3 minutes: a pipeline's hops take milliseconds, and a stalled one minutes.
var latencyBuckets = prometheus.ExponentialBuckets(0.005, 2, 16)

// registered are every collector Registry holds.
func registered() []prometheus.Collector {
	return []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		EventsHandled, EventHandleSeconds, EventsPublished, PublishErrors, DeadLetters, NodeReportsRefused, DeadLetterErrors, PlacerLeader, Verdicts, Decisions,
		ApplierOperations, PinnedPods, SubmitToPlacedSeconds, PlacedToAppliedSeconds, KubeEvents, consumerLag, fleetCollector{},
		workqueueDepth, workqueueAdds, workqueueLatency, workqueueWorkDuration, workqueueUnfinished, workqueueLongestRunning, workqueueRetries}
}

// fqName reads a metric's full name out of its description, which offers it only in its String form.
var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// Names lists the names of every metric family fleetflow's /metrics may show, sorted: a histogram's with its
// _bucket, _sum and _count series. Alerts and dashboards are checked against it.
func Names() []string {
	var names []string
	for _, c := range registered() {
		_, histogram := c.(prometheus.Histogram)
		if _, vec := c.(*prometheus.HistogramVec); vec {
			histogram = true
		}
		for _, d := range descriptions(c) {
			m := fqName.FindStringSubmatch(d.String())
			if m == nil {
				continue
			}
			names = append(names, m[1])
			if histogram {
				names = append(names, m[1]+"_bucket", m[1]+"_sum", m[1]+"_count")
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// descriptions are what c describes of its metrics.
func descriptions(c prometheus.Collector) []*prometheus.Desc {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	var descs []*prometheus.Desc
	for d := range ch {
		descs = append(descs, d)
	}
	return descs
}

func init() {
	// Series that exist before their first event, so a rate() or an alert on them has something to read.
	for _, status := range []string{"Placed", "Unschedulable", "NoPolicy", "Invalid"} {
		Verdicts.WithLabelValues(status)
	}
	for _, action := range []string{"Apply", "Delete"} {
		Decisions.WithLabelValues(action)
	}
	Registry.MustRegister(registered()...)
}

// FleetStats is what the leading placer's view holds: workloads placed or not and why not, registered clusters
// Ready or not, and each cluster's capacity.
type FleetStats struct {
	Placed, Unplaced, Ready, NotReady int
	// UnplacedByReason counts the workloads whose last verdict does not place them, under each reason it gave
	// (a reason code, or NoPolicy, Invalid); a workload that several clusters rejected for different reasons
	// counts under each.
	UnplacedByReason map[string]int
	// ClusterReady says of each registered cluster whether it is Ready.
	ClusterReady map[string]bool
	// Capacity is each cluster's schedulable capacity, one entry per cluster and resource.
	Capacity []ClusterResource
}

// ClusterResource is what a cluster's schedulable nodes have of one resource, in its base unit (CPU in cores,
// memory in bytes).
type ClusterResource struct {
	Cluster, Resource string
	Allocatable, Free float64
}

// fleetSource reads the fleet's stats when /metrics is read; nil while no placer leads in this process.
var fleetSource atomic.Pointer[func() FleetStats]

// SetFleetSource makes /metrics read the fleet's stats with stats, from an immutable view when the metrics are
// scraped rather than on the placer's goroutine; nil reports zeros (no placer leads here).
func SetFleetSource(stats func() FleetStats) {
	if stats == nil {
		fleetSource.Store(nil)
		return
	}
	fleetSource.Store(&stats)
}

var (
	fleetWorkloadsDesc = prometheus.NewDesc(namespace+"_placer_workloads",
		"Workloads the leading placer knows, by whether they are placed (0 where no placer leads).", []string{"placed"}, nil)
	fleetClustersDesc = prometheus.NewDesc(namespace+"_placer_clusters",
		"Registered clusters the leading placer knows, by whether they are Ready (0 where no placer leads).", []string{"ready"}, nil)
	fleetUnplacedDesc = prometheus.NewDesc(namespace+"_placer_unplaced_workloads",
		"Workloads whose last verdict does not place them, under each reason it gave (a cluster reason code, "+
			"NoPolicy or Invalid); one rejected for several reasons counts under each.", []string{"reason"}, nil)
	clusterReadyDesc = prometheus.NewDesc(namespace+"_cluster_ready",
		"1 while a registered cluster is Ready (its producer beats and its nodes are known), 0 while it is not.", []string{"cluster"}, nil)
	clusterAllocatableDesc = prometheus.NewDesc(namespace+"_cluster_allocatable",
		"Allocatable amount of a resource on a cluster's schedulable nodes, in its base unit (CPU in cores, memory in bytes).",
		[]string{"cluster", "resource"}, nil)
	clusterFreeDesc = prometheus.NewDesc(namespace+"_cluster_free",
		"Free amount of a resource on a cluster's schedulable nodes, after requests and reservations, in its base unit.",
		[]string{"cluster", "resource"}, nil)
)

// oneIf is 1 when b holds, else 0: a boolean as a gauge.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// fleetCollector reports FleetStats at each scrape.
type fleetCollector struct{}

func (fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fleetWorkloadsDesc, fleetClustersDesc, fleetUnplacedDesc, clusterReadyDesc, clusterAllocatableDesc, clusterFreeDesc} {
		ch <- d
	}
}

func (fleetCollector) Collect(ch chan<- prometheus.Metric) {
	var stats FleetStats
	if read := fleetSource.Load(); read != nil {
		stats = (*read)()
	}
	ch <- prometheus.MustNewConstMetric(fleetWorkloadsDesc, prometheus.GaugeValue, float64(stats.Placed), "true")
	ch <- prometheus.MustNewConstMetric(fleetWorkloadsDesc, prometheus.GaugeValue, float64(stats.Unplaced), "false")
	ch <- prometheus.MustNewConstMetric(fleetClustersDesc, prometheus.GaugeValue, float64(stats.Ready), "true")
	ch <- prometheus.MustNewConstMetric(fleetClustersDesc, prometheus.GaugeValue, float64(stats.NotReady), "false")
	for reason, n := range stats.UnplacedByReason {
		ch <- prometheus.MustNewConstMetric(fleetUnplacedDesc, prometheus.GaugeValue, float64(n), reason)
	}
	for cluster, ready := range stats.ClusterReady {
		ch <- prometheus.MustNewConstMetric(clusterReadyDesc, prometheus.GaugeValue, oneIf(ready), cluster)
	}
	for _, c := range stats.Capacity {
		ch <- prometheus.MustNewConstMetric(clusterAllocatableDesc, prometheus.GaugeValue, c.Allocatable, c.Cluster, c.Resource)
		ch <- prometheus.MustNewConstMetric(clusterFreeDesc, prometheus.GaugeValue, c.Free, c.Cluster, c.Resource)
	}
}
