package observe

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Workqueue metrics under the names client-go's and controller-runtime's controllers export, so the dashboards
// and alerts written for those read fleetflow's producers as they are; the label name is the queue's.
var (
	workqueueDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of the workqueue."}, []string{"name"})
	workqueueAdds = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "adds_total",
		Help: "Adds handled by the workqueue."}, []string{"name"})
	workqueueLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help: "How long an item stays in the workqueue before being requested.", Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12)},
		[]string{"name"})
	workqueueWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: "workqueue", Name: "work_duration_seconds",
		Help: "How long processing an item from the workqueue takes.", Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12)},
		[]string{"name"})
	workqueueUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers."}, []string{"name"})
	workqueueLongestRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "Seconds the longest running worker of the workqueue has been running."}, []string{"name"})
	workqueueRetries = prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "workqueue", Name: "retries_total",
		Help: "Retries handled by the workqueue."}, []string{"name"})
)

// WorkqueueMetrics is the workqueue.MetricsProvider of the producers' queues: give it as their config's
// MetricsProvider.
var WorkqueueMetrics workqueue.MetricsProvider = workqueueProvider{}

type workqueueProvider struct{}

func (workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return workqueueDepth.WithLabelValues(name)
}

func (workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return workqueueAdds.WithLabelValues(name)
}

func (workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return workqueueLatency.WithLabelValues(name)
}

func (workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return workqueueWorkDuration.WithLabelValues(name)
}

func (workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return workqueueUnfinished.WithLabelValues(name)
}

func (workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return workqueueLongestRunning.WithLabelValues(name)
}

func (workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return workqueueRetries.WithLabelValues(name)
}
