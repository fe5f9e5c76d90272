package lifecycle

import "time"

// The default budget of one cluster's node reports: what the placer takes of them, on the time the stream
// stored them. A producer coalesces a node's changes over 200 ms and republishes every node every 10 min;
// the burst takes a 5,000-node cluster republishing all its nodes at once four times over.
const (
	DefaultNodeReportRate  = 1000
	DefaultNodeReportBurst = 20000
	// nodeReportRecordEvery is the least stream time between two refusals of one cluster recorded as dead
	// letters: a flood refused at thousands a second must not flood the dead letters in turn.
	nodeReportRecordEvery = time.Minute
)

// ReportBudget is a token bucket per cluster over the times at which a stream stored its reports: each report
// takes a token, and Rate tokens a second come back, up to Burst. Stream time is the server's, so a producer
// cannot stretch its budget by dating its events apart, and the same history always admits the same reports.
// The zero value admits everything.
type ReportBudget struct {
	// Rate is how many reports a second a cluster may send, on average; Burst how many at once.
	Rate, Burst float64
	clusters    map[string]*clusterBudget
}

type clusterBudget struct {
	tokens float64
	// at is the stream time tokens was counted at.
	at time.Time
	// refused counts the refusals since the last one recorded, recordedAt; recorded says there was one.
	refused    int
	recordedAt time.Time
	recorded   bool
}

// Refusal is the answer of ReportBudget.Take for a report over its cluster's budget.
type Refusal struct {
	// Refused says the report is over budget.
	Refused bool
	// Record, when not 0, is how many refusals (this one included) to record now, for example as one dead
	// letter: at most one each minute of stream time per cluster.
	Record int
}

// Take spends a token of cluster's budget on a report stored at at, or refuses the report when none is left.
// Reports should come in stream order; one stored earlier than the last (a redelivery) spends without refilling.
func (b *ReportBudget) Take(cluster string, at time.Time) Refusal {
	if b.Rate <= 0 && b.Burst <= 0 {
		return Refusal{}
	}
	if b.clusters == nil {
		b.clusters = map[string]*clusterBudget{}
	}
	c, ok := b.clusters[cluster]
	if !ok {
		c = &clusterBudget{tokens: b.Burst, at: at}
		b.clusters[cluster] = c
	}
	if at.After(c.at) {
		c.tokens = min(b.Burst, c.tokens+at.Sub(c.at).Seconds()*b.Rate)
		c.at = at
	}
	if c.tokens >= 1 {
		c.tokens--
		return Refusal{}
	}
	c.refused++
	if c.recorded && at.Sub(c.recordedAt) < nodeReportRecordEvery {
		return Refusal{Refused: true}
	}
	n := c.refused
	c.refused, c.recordedAt, c.recorded = 0, at, true
	return Refusal{Refused: true, Record: n}
}
