package observe

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// lagCollector reports, at each scrape, what each running durable consumer of the process has still to
// handle, as the server counts it: the messages not yet delivered, and those delivered but not acknowledged.
// Those are a pipeline's first signs of falling behind, and only the server knows them.
type lagCollector struct {
	mu        sync.Mutex
	next      int
	consumers map[int]watchedConsumer

	pending, unacknowledged *prometheus.Desc
}

type watchedConsumer struct {
	name     string
	consumer jetstream.Consumer
}

var consumerLag = &lagCollector{consumers: map[int]watchedConsumer{},
	pending: prometheus.NewDesc(namespace+"_consumer_pending_messages",
		"Messages of a durable consumer's stream it has not been delivered yet.", []string{"consumer"}, nil),
	unacknowledged: prometheus.NewDesc(namespace+"_consumer_unacknowledged_messages",
		"Messages delivered to a durable consumer and not acknowledged yet.", []string{"consumer"}, nil)}

// lagInfoTimeout bounds the server round trips of a scrape.
const lagInfoTimeout = 2 * time.Second

// WatchConsumer reports consumer's lag under name until the returned function is called.
func WatchConsumer(name string, consumer jetstream.Consumer) (unwatch func()) {
	l := consumerLag
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.next
	l.next++
	l.consumers[id] = watchedConsumer{name: name, consumer: consumer}
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.consumers, id)
	}
}

func (l *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.pending
	ch <- l.unacknowledged
}

// Collect asks the server about every watched consumer; one it cannot answer for (gone, or the server
// unreachable) is left out of the scrape rather than failing it.
func (l *lagCollector) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	watched := make([]watchedConsumer, 0, len(l.consumers))
	seen := map[string]bool{}
	for _, w := range l.consumers {
		if !seen[w.name] { // two loops on one consumer share its numbers
			seen[w.name] = true
			watched = append(watched, w)
		}
	}
	l.mu.Unlock()
	// Asked together: a process runs a consumer per workload cluster, and one after the other, a slow server
	// would hold the scrape past its timeout.
	ctx, cancel := context.WithTimeout(context.Background(), lagInfoTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, w := range watched {
		wg.Go(func() {
			info, err := w.consumer.Info(ctx)
			if err != nil {
				return
			}
			ch <- prometheus.MustNewConstMetric(l.pending, prometheus.GaugeValue, float64(info.NumPending), w.name)
			ch <- prometheus.MustNewConstMetric(l.unacknowledged, prometheus.GaugeValue, float64(info.NumAckPending), w.name)
		})
	}
	wg.Wait()
}
