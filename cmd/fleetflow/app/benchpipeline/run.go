package benchpipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/placementbench"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// Result is what a run measured. Times are wall-clock on the machine the run shares with everything else.
type Result struct {
	Clusters  int `json:"clusters"`
	Nodes     int `json:"nodes"`
	Workloads int `json:"workloads"`
	// Rate is the offered load in workload events per second, 0 for as fast as possible.
	Rate int `json:"rate"`
	// BusFloor, when set, names what the relay that took the placer's place published (Config.BusFloor):
	// the figures are then those of the streams alone, and no workload was placed.
	BusFloor string `json:"busFloor,omitempty"`
	// OfferedPerSecond is the rate the workload events were actually published at.
	OfferedPerSecond float64 `json:"offeredPerSecond"`

	// DecisionsPerSecond counts workloads given a persisted verdict per second, from the first workload event
	// published to the last first verdict stored.
	DecisionsPerSecond float64 `json:"decisionsPerSecond"`
	// P50Ms, P99Ms and MaxMs are percentiles of the time from a workload event's publish to its first verdict
	// stored in FLEETFLOW_EVENTS, the placer's first persisted answer for it.
	P50Ms float64 `json:"p50Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
	// DecisionP50Ms and DecisionP99Ms run from publish to the first decision stored in FLEETFLOW_DECISIONS,
	// over the workloads that were placed.
	DecisionP50Ms float64 `json:"decisionP50Ms"`
	DecisionP99Ms float64 `json:"decisionP99Ms"`
	// RawPublishPerSecond is plain JetStream async publish of messages of EventBytes to a scratch stream on
	// the same server, in the same run: the faster of RawPublishTCPPerSecond (a socket, as the synthetic
	// producers publish) and RawPublishInProcessPerSecond (in process, as the placer talks to the embedded
	// server).
	RawPublishPerSecond          float64 `json:"rawPublishPerSecond"`
	RawPublishTCPPerSecond       float64 `json:"rawPublishTCPPerSecond"`
	RawPublishInProcessPerSecond float64 `json:"rawPublishInProcessPerSecond,omitempty"`
	// Ratio is DecisionsPerSecond / RawPublishPerSecond; the target is at least 0.1.
	Ratio float64 `json:"ratio"`

	// Placed and Unschedulable count first verdicts; Other counts NoPolicy and Invalid.
	Placed        int `json:"placed"`
	Unschedulable int `json:"unschedulable"`
	Other         int `json:"other"`
	// Decisions counts the decisions persisted for the workloads.
	Decisions int `json:"decisions"`
	// EventBytes is the mean size of a workload event message (headers and body); VerdictBytes the mean
	// size of the data of a verdict sent on its own (a reason and a code per rejected cluster, and the
	// analysis): Unschedulable ones, as a Placed verdict rides with its Apply.
	EventBytes   int `json:"eventBytes"`
	VerdictBytes int `json:"verdictBytes"`
	// FleetEvents were published to load the fleet, which took FleetLoadSeconds until the placer had them all.
	FleetEvents      int     `json:"fleetEvents"`
	FleetLoadSeconds float64 `json:"fleetLoadSeconds"`
	// WorkloadSeconds is the span DecisionsPerSecond divides by; CPUSeconds is the whole process's CPU time
	// over it (placer, server and producers share the process; the watcher reads the results afterwards).
	WorkloadSeconds float64 `json:"workloadSeconds"`
	CPUSeconds      float64 `json:"cpuSeconds"`
	RawMessages     int     `json:"rawMessages"`
	RawSeconds      float64 `json:"rawSeconds"`

	// FloodNodeEvents is Config.FloodNodeEvents. When set, the run had three phases (Phases) of Workloads
	// workload events each, the flood during the second, and the figures above are the first phase's.
	FloodNodeEvents int          `json:"floodNodeEvents,omitempty"`
	Phases          []FloodPhase `json:"phases,omitempty"`
}

// Run starts an embedded JetStream and the placer, loads the fleet through the bus, then publishes the
// workload events at the configured rate and measures what the placer persists, and finally the raw
// publish reference on the same server.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dataDir := cfg.DataDir
	if dataDir == "" {
		dir, err := os.MkdirTemp("", "fleetflow-bench-pipeline-")
		if err != nil {
			return nil, fmt.Errorf("bench data directory: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		dataDir = dir
	}
	b, err := app.OpenBus(ctx, app.BusOptions{DataDir: dataDir, Streams: streams.DefaultOptions()},
		"fleetflow-bench-placer", log)
	if err != nil {
		return nil, err
	}
	defer b.Close()

	// A placer that fails ends the run at once instead of leaving it to time out.
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	placerCtx, stopPlacer := context.WithCancel(ctx)
	placerDone := make(chan struct{})
	var placerErr error
	go func() {
		defer close(placerDone)
		if cfg.BusFloor != "" {
			placerErr = runRelay(placerCtx, b, cfg.BusFloor, cfg.Clusters, log)
		} else {
			placerErr = app.RunPlacer(placerCtx, b, placer.PlacerConfig{NodeReportRate: cfg.NodeReportRate, NodeReportBurst: cfg.NodeReportBurst}, log)
		}
		if placerCtx.Err() == nil {
			cancelRun(fmt.Errorf("placer stopped: %w", placerErr))
		}
	}()
	stop := func() error {
		stopPlacer()
		<-placerDone
		return placerErr
	}
	defer func() { _ = stop() }()
	cause := func(err error) error {
		if c := context.Cause(ctx); c != nil && !errors.Is(c, context.Canceled) && !errors.Is(c, context.DeadlineExceeded) {
			return c
		}
		return err
	}

	res := &Result{Clusters: cfg.Clusters, Nodes: cfg.Clusters * cfg.NodesPerCluster, Workloads: cfg.Workloads, Rate: cfg.Rate,
		BusFloor: cfg.BusFloor, FloodNodeEvents: cfg.FloodNodeEvents}
	producer, err := newAsyncPublisher(b.URL, "fleetflow-bench-producers")
	if err != nil {
		return nil, err
	}
	defer producer.close()

	heartbeatsDone := make(chan struct{})
	var heartbeats sync.WaitGroup
	defer func() { close(heartbeatsDone); heartbeats.Wait() }()
	// Heartbeats run from the start: loading a large fleet can take longer than the placer's timeout.
	clusters := cfg.Clusters
	if cfg.FloodNodeEvents > 0 {
		clusters++ // the flooding cluster
	}
	heartbeats.Go(func() { beat(ctx, producer, clusters, heartbeatsDone, log) })
	if err := loadFleet(ctx, b, producer, cfg, res); err != nil {
		return nil, cause(fmt.Errorf("load the fleet: %w", err))
	}

	if cfg.FloodNodeEvents == 0 {
		if _, err := measurePhase(ctx, b, producer, cfg, 0, res); err != nil {
			return nil, cause(err)
		}
	} else {
		for i, name := range []string{PhaseBefore, PhaseFlood, PhaseAfter} {
			phaseCfg, into := cfg, res
			if name != PhaseFlood {
				phaseCfg.FloodNodeEvents = 0
			}
			if name != PhaseFlood {
				// Profiles are of the flood, what such a run is about.
				phaseCfg.CPUProfile, phaseCfg.HeapProfile, phaseCfg.HeapProfileBefore = nil, nil, nil
			}
			if i > 0 {
				into = &Result{} // the result's own figures are the first phase's
			}
			phase, err := measurePhase(ctx, b, producer, phaseCfg, i*cfg.Workloads, into)
			if err != nil {
				return nil, cause(fmt.Errorf("phase %s: %w", name, err))
			}
			phase.Name = name
			res.Phases = append(res.Phases, *phase)
		}
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		return nil, fmt.Errorf("placer: %w", err)
	}

	// The phase dropped its messages as it sent them; the reference publishes the same ones again.
	msgs, _, err := workloadMessages(cfg, 0)
	if err != nil {
		return nil, err
	}
	if err := rawPublish(ctx, b, msgs, cfg, res); err != nil {
		return nil, err
	}
	if res.RawPublishPerSecond > 0 {
		res.Ratio = res.DecisionsPerSecond / res.RawPublishPerSecond
	}
	return res, nil
}

// loadFleet publishes the policy, the namespaces, every cluster and every node, then waits until the
// placer has applied them all, so the workload phase measures workloads only.
func loadFleet(ctx context.Context, b *app.Bus, producer *asyncPublisher, cfg Config, res *Result) error {
	start := time.Now()
	apis, err := servedAPIs()
	if err != nil {
		return err
	}
	send := func(o outgoing) error {
		res.FleetEvents++
		return producer.publishEvent(ctx, o)
	}
	policy, err := policyEvent()
	if err != nil {
		return err
	}
	if err := send(policy); err != nil {
		return err
	}
	namespaces, err := namespaceEvents()
	if err != nil {
		return err
	}
	for _, o := range namespaces {
		if err := send(o); err != nil {
			return err
		}
	}
	gpuNodes := cfg.NodesPerCluster * cfg.GPUNodePercent / 100
	clusters := cfg.Clusters
	if cfg.FloodNodeEvents > 0 {
		clusters++ // the flooding cluster, last
	}
	for c := range clusters {
		labels := clusterLabels(c)
		if c == cfg.Clusters {
			labels = floodLabels()
		}
		events, err := clusterEvents(c, labels, apis, time.Now())
		if err != nil {
			return err
		}
		for n := range cfg.NodesPerCluster {
			o, err := nodeEvent(c, n, gpuNodes)
			if err != nil {
				return err
			}
			events = append(events, o)
		}
		for _, o := range events {
			if err := send(o); err != nil {
				return err
			}
		}
	}
	if err := producer.wait(ctx); err != nil {
		return err
	}
	if err := waitDrained(ctx, b.JetStream); err != nil {
		return err
	}
	res.FleetLoadSeconds = time.Since(start).Seconds()
	return nil
}

// waitDrained waits until the placer's durable consumer has nothing pending or unacknowledged.
func waitDrained(ctx context.Context, js jetstream.JetStream) error {
	for {
		c, err := js.Consumer(ctx, schemas.StreamEvents, schemas.ConsumerPlacer)
		if err == nil {
			info, err := c.Info(ctx)
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
				return nil
			}
		} else if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("placer consumer: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the placer to take every event: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// beat publishes every cluster's heartbeat each heartbeatInterval, as the cluster producers do.
func beat(ctx context.Context, producer *asyncPublisher, clusters int, done <-chan struct{}, log *slog.Logger) {
	ticker := time.NewTicker(heartbeatInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case now := <-ticker.C:
			for c := range clusters {
				o, err := heartbeatEvent(c, now)
				if err == nil {
					err = producer.publishEvent(ctx, o)
				}
				if err != nil && ctx.Err() == nil {
					log.Warn("bench heartbeat not published", "cluster", clusterName(c), "error", err)
				}
			}
		}
	}
}

// workloadMessages encodes every workload event ahead of time, naming them from the first-th on, so the publisher spends its time publishing.
func workloadMessages(cfg Config, first int) ([]*nats.Msg, []schemas.ObjectRef, error) {
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), 1))
	created := time.Now()
	msgs := make([]*nats.Msg, cfg.Workloads)
	refs := make([]schemas.ObjectRef, cfg.Workloads)
	for i := range cfg.Workloads {
		payload := &schemas.WorkloadChanged{Object: workloadObject(first+i, r, created)}
		ref := payload.Ref()
		subject := schemas.WorkloadSubject(ref)
		e, err := codec.NewEvent(schemas.TypeWorkloadChanged, schemas.SourceControlPlaneProducer, subject,
			schemas.WorkloadChangedID(ref, schemas.ResourceVersionOf(payload.Object)), payload)
		if err != nil {
			return nil, nil, fmt.Errorf("workload %s: %w", ref, err)
		}
		msg, err := bus.Encode(subject, e)
		if err != nil {
			return nil, nil, err
		}
		msgs[i], refs[i] = msg, ref
	}
	return msgs, refs, nil
}

func messageSize(m *nats.Msg) int {
	n := len(m.Data)
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4 // "k: v\r\n"
		}
	}
	return n
}

// publishPaced publishes msgs at rate per second (0: as fast as the bounded in-flight window allows),
// stamping each event's time, recording when its publish started, and dropping it from msgs.
func publishPaced(ctx context.Context, p *asyncPublisher, msgs []*nats.Msg, rate int, published []time.Time) error {
	send := func(i int) error {
		now := time.Now()
		msg := msgs[i]
		// Dropped once sent: the producers are other processes in production, and the messages waiting
		// here would otherwise be marked by every collection of the process the phase measures.
		msgs[i] = nil
		msg.Header.Set("ce-time", now.UTC().Format(time.RFC3339Nano))
		published[i] = now
		return p.publish(ctx, msg, jetstream.WithMsgID(msg.Header.Get("ce-id")))
	}
	if rate == 0 {
		for i := range msgs {
			if err := send(i); err != nil {
				return err
			}
		}
		return p.wait(ctx)
	}
	interval := max(time.Second/time.Duration(rate), time.Millisecond)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	start := time.Now()
	sent := 0
	for sent < len(msgs) {
		// Each tick sends what is due by now, so a late tick catches up instead of lowering the rate.
		due := min(len(msgs), int(time.Since(start).Seconds()*float64(rate))+1)
		for ; sent < due; sent++ {
			if err := send(sent); err != nil {
				return err
			}
		}
		if sent == len(msgs) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
	return p.wait(ctx)
}

func summarize(res *Result, outcomes []outcome, published []time.Time) {
	var latencies, decisionLatencies []float64
	first, last := published[0], time.Time{}
	for i, o := range outcomes {
		if published[i].Before(first) {
			first = published[i]
		}
		if o.verdictAt.After(last) {
			last = o.verdictAt
		}
		latencies = append(latencies, ms(o.verdictAt.Sub(published[i])))

		if !o.decidedAt.IsZero() {
			decisionLatencies = append(decisionLatencies, ms(o.decidedAt.Sub(published[i])))
		}
		res.Decisions += o.decisions
		switch o.firstStatus {
		case schemas.VerdictPlaced:
			res.Placed++
		case schemas.VerdictUnschedulable:
			res.Unschedulable++
		default:
			res.Other++
		}
	}
	res.WorkloadSeconds = last.Sub(first).Seconds()
	if res.WorkloadSeconds > 0 {
		res.DecisionsPerSecond = float64(len(outcomes)) / res.WorkloadSeconds
	}
	slices.Sort(latencies)
	slices.Sort(decisionLatencies)
	res.P50Ms, res.P99Ms, res.MaxMs = percentile(latencies, 50), percentile(latencies, 99), percentile(latencies, 100)
	res.DecisionP50Ms, res.DecisionP99Ms = percentile(decisionLatencies, 50), percentile(decisionLatencies, 99)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// rawPublishStream is the scratch stream of the reference measurement; file storage like fleetflow's own.
const rawPublishStream = "BENCH_RAW_PUBLISH"

// rawPublish measures plain JetStream async publish of the workload messages' bytes to a scratch stream.
func rawPublish(ctx context.Context, b *app.Bus, msgs []*nats.Msg, cfg Config, res *Result) error {
	n := cfg.RawMessages
	if n == 0 {
		n = max(cfg.Workloads, 100000)
	}
	stream, err := b.JetStream.CreateStream(ctx, jetstream.StreamConfig{Name: rawPublishStream,
		Subjects: []string{"bench.raw.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		return fmt.Errorf("raw publish stream: %w", err)
	}
	raw := make([]*nats.Msg, len(msgs))
	for i, m := range msgs {
		// The same headers and body, without the Nats-Msg-Id the workload publish added: a plain publish.
		header := nats.Header{}
		for k, v := range m.Header {
			if k != jetstream.MsgIDHeader {
				header[k] = v
			}
		}
		raw[i] = &nats.Msg{Subject: "bench.raw." + strconv.Itoa(i%len(teams)) + m.Subject[len("fleetflow"):],
			Header: header, Data: m.Data}
	}
	// The reference is taken over both transports a publisher can have here, a socket like the synthetic
	// producers and in process like the placer, each rawRounds times into the emptied stream, and the fastest
	// counts, so the ratio never flatters: a single round now and then came out at two thirds of the others
	// (a collection of the placer's heap, or the machine, during it).
	res.RawMessages = n
	type transport struct {
		name    string
		options []nats.Option
		into    *float64
	}
	transports := []transport{{"tcp", nil, &res.RawPublishTCPPerSecond}}
	if inProcess := b.InProcess(); inProcess != nil {
		transports = append(transports, transport{"in-process", inProcess, &res.RawPublishInProcessPerSecond})
	}
	for range rawRounds {
		for _, transport := range transports {
			seconds, err := rawPublishOver(ctx, b.URL, transport.options, raw, n)
			if err != nil {
				return fmt.Errorf("raw publish over %s: %w", transport.name, err)
			}
			if err := stream.Purge(ctx); err != nil {
				return fmt.Errorf("raw publish stream: %w", err)
			}
			*transport.into = max(*transport.into, float64(n)/seconds)
			if *transport.into > res.RawPublishPerSecond {
				res.RawPublishPerSecond, res.RawSeconds = *transport.into, seconds
			}
		}
	}
	return nil
}

// rawRounds is how many times the raw reference is measured over each transport.
const rawRounds = 2

// rawPublishOver publishes n messages from raw, round robin, on a new connection and returns the seconds
// until all are acknowledged.
func rawPublishOver(ctx context.Context, url string, options []nats.Option, raw []*nats.Msg, n int) (float64, error) {
	p, err := newAsyncPublisher(url, "fleetflow-bench-raw", options...)
	if err != nil {
		return 0, err
	}
	defer p.close()
	start := time.Now()
	for i := range n {
		m := raw[i%len(raw)]
		if err := p.publish(ctx, &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}); err != nil {
			return 0, err
		}
	}
	if err := p.wait(ctx); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}

// measurePhase publishes cfg.Workloads workload events, named from the first-th on, at cfg.Rate while the
// flooding cluster, if cfg.FloodNodeEvents is set, publishes that many node reports a second, and fills the
// workload figures of res from what the placer persisted for them.
func measurePhase(ctx context.Context, b *app.Bus, producer *asyncPublisher, cfg Config, first int, res *Result) (*FloodPhase, error) {
	msgs, refs, err := workloadMessages(cfg, first)
	if err != nil {
		return nil, err
	}
	size := 0
	for _, m := range msgs {
		size += messageSize(m)
	}
	res.EventBytes = size / len(msgs)
	var floodMsgs []*nats.Msg
	var flooder *asyncPublisher
	if cfg.FloodNodeEvents > 0 {
		// Enough for the phase's publishing and two seconds more; encoded ahead, as the workloads are.
		seconds := (cfg.Workloads+cfg.Rate-1)/cfg.Rate + 2
		floodMsgs, err = floodMessages(cfg.Clusters, cfg.NodesPerCluster, cfg.NodesPerCluster*cfg.GPUNodePercent/100,
			cfg.FloodNodeEvents*seconds)
		if err != nil {
			return nil, err
		}
		if flooder, err = newAsyncPublisher(b.URL, "fleetflow-bench-flood"); err != nil {
			return nil, err
		}
		defer flooder.close()
	}
	events, err := b.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		return nil, err
	}
	dead, err := b.JetStream.Stream(ctx, schemas.StreamDead)
	if err != nil {
		return nil, err
	}
	storedBefore, err := events.Info(ctx)
	if err != nil {
		return nil, err
	}
	deadBefore, err := dead.Info(ctx)
	if err != nil {
		return nil, err
	}

	published := make([]time.Time, len(msgs))
	// Collect the fleet load's garbage now, as testing.B does before timing, so the workload phase pays
	// for the collections its own allocations cause and not for a leftover of the setup.
	runtime.GC()
	if cfg.HeapProfileBefore != nil {
		if err := pprof.WriteHeapProfile(cfg.HeapProfileBefore); err != nil {
			return nil, fmt.Errorf("heap profile before the workload phase: %w", err)
		}
	}
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	profiling := cfg.CPUProfile != nil
	stopProfile := func() {
		if profiling {
			pprof.StopCPUProfile()
			profiling = false
		}
	}
	defer stopProfile()
	phase := &FloodPhase{}
	start, startCPU := time.Now(), placementbench.CPUTime()
	stopFlood := make(chan struct{})
	floodDone := make(chan error, 1)
	if flooder != nil {
		go func() {
			sent, seconds, err := flood(ctx, flooder, floodMsgs, cfg.FloodNodeEvents, stopFlood)
			phase.NodeEvents = sent
			if seconds > 0 {
				phase.NodeEventsPerSecond = float64(sent) / seconds
			}
			floodDone <- err
		}()
	} else {
		floodDone <- nil
	}
	err = publishPaced(ctx, producer, msgs, cfg.Rate, published)
	// The flood lasts as long as the workloads are published; what it left in the stream is taken after.
	close(stopFlood)
	if floodErr := <-floodDone; err == nil {
		err = floodErr
	}
	if err != nil {
		return nil, fmt.Errorf("publish workloads: %w", err)
	}
	publishSeconds := time.Since(start).Seconds()
	res.OfferedPerSecond = float64(len(msgs)) / publishSeconds
	storedAfter, err := events.Info(ctx)
	if err != nil {
		return nil, err
	}
	phase.StoredBytesPerSecond = float64(storedAfter.State.Bytes-storedBefore.State.Bytes) / publishSeconds
	// The placer acknowledges an event only once what it published for it is stored, so with its consumer
	// drained every verdict and decision of the phase is persisted.
	if err := waitDrained(ctx, b.JetStream); err != nil {
		return nil, err
	}
	phase.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = (placementbench.CPUTime() - startCPU).Seconds()
	stopProfile()
	if cfg.HeapProfile != nil {
		runtime.GC()
		if err := pprof.WriteHeapProfile(cfg.HeapProfile); err != nil {
			return nil, fmt.Errorf("heap profile: %w", err)
		}
	}
	deadAfter, err := dead.Info(ctx)
	if err != nil {
		return nil, err
	}
	phase.DeadLetters = int(deadAfter.State.Msgs - deadBefore.State.Msgs)
	// The watcher reads the verdicts and decisions back only now: their stream timestamps say when each was
	// stored whenever they are read, and reading them while the phase runs would make the process it
	// measures deliver two more messages per workload.
	w, err := newWatcher(ctx, b.URL, refs, b.InProcess()...)
	if err != nil {
		return nil, err
	}
	defer w.close()
	if err := w.waitFor(ctx, "a verdict for every workload", func(w *watcher) bool { return w.verdicts == len(msgs) }); err != nil {
		return nil, err
	}
	decisions, err := b.JetStream.Stream(ctx, schemas.StreamDecisions)
	if err != nil {
		return nil, err
	}
	info, err := decisions.Info(ctx)
	if err != nil {
		return nil, err
	}
	if err := w.waitFor(ctx, "every decision read back", func(w *watcher) bool { return w.lastDecisionSeq >= info.State.LastSeq }); err != nil {
		return nil, err
	}
	// Decisions answer for placed workloads, so the verdicts of their own may still be coming in.
	lastVerdict, err := events.GetLastMsgForSubject(ctx, schemas.SubjectEventsPrefix+".verdict.>")
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return nil, fmt.Errorf("last verdict: %w", err)
	default:
		if err := w.waitFor(ctx, "every verdict read back", func(w *watcher) bool { return w.lastVerdictSeq >= lastVerdict.Sequence }); err != nil {
			return nil, err
		}
	}
	w.mu.Lock()
	summarize(res, w.outcomes, published)
	if w.verdictMessages > 0 {
		res.VerdictBytes = w.verdictBytes / w.verdictMessages
	}
	w.mu.Unlock()
	phase.DecisionsPerSecond, phase.P50Ms, phase.P99Ms, phase.MaxMs = res.DecisionsPerSecond, res.P50Ms, res.P99Ms, res.MaxMs
	phase.Placed, phase.Unschedulable, phase.CPUSeconds = res.Placed, res.Unschedulable, res.CPUSeconds
	return phase, nil
}
