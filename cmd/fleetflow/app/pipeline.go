package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers/applier"
	"github.com/fleetflow/fleetflow/consumers/placer"
	"github.com/fleetflow/fleetflow/consumers/status"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/pinner"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/codec"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// BusOptions say where JetStream is.
type BusOptions struct {
	// URL of an external NATS server; empty embeds one.
	URL string
	// DataDir holds the embedded server's storage (DataDir/jetstream).
	DataDir string
	// Listen is the embedded server's host:port ("127.0.0.1:0" picks a free port).
	Listen  string
	Streams streams.Options
	// Auth is how to connect to an external server; an embedded one takes none.
	Auth bus.ClientAuth
	// Users are each part's NATS user (see natsauth): the bus connects as their admin, and As as a part's
	// user. An embedded server accepts them only; an external one has them in its configuration.
	Users *natsauth.Users
}

// Bus is a provisioned JetStream connection, with the embedded server when there is one.
type Bus struct {
	URL       string
	Conn      *nats.Conn
	JetStream jetstream.JetStream
	Publisher *bus.Publisher
	// Streams is how the streams were provisioned; the lease bucket is replicated as they are.
	Streams  streams.Options
	embedded *bus.Embedded
	// unchecked removes the bus's health checks, and releases what OnClose added.
	unchecked []func()
	// closed makes Close idempotent: a test stops NATS before its cleanup closes the bus.
	closed sync.Once
	// users are the embedded server's users; nil when it takes any client.
	users *natsauth.Users
	// borrowed is set on a bus of As, which shares the embedded server of the bus it came from but does not stop it.
	borrowed bool
	// partOptions are how As reaches the server: in process, or with the TLS settings of an external one.
	partOptions []nats.Option
}

// Users are the users the embedded server accepts, nil when it accepts any client.
func (b *Bus) Users() *natsauth.Users { return b.users }

// As is a connection to b's server as the user of role for cluster ("" for parts that are not a cluster's),
// for a part of this process to work with its own rights, and what closes it; b itself (and a release that
// does nothing) when b's server has no users, or none for that part (a cluster registered after the users
// were made), which the log says. It does not provision the streams: b did.
func (b *Bus) As(role natsauth.Role, cluster string, log *slog.Logger) (*Bus, func(), error) {
	user := b.users.Get(role, cluster)
	if role == natsauth.Admin {
		return b, func() {}, nil // b is the admin's already
	}
	if user == nil {
		if b.users != nil {
			log.Warn("no NATS user of this part: it works with the process's own rights", "role", role, "cluster", cluster)
		}
		return b, func() {}, nil
	}
	opts, err := bus.NkeySeedOptions(user.Seed)
	if err != nil {
		return nil, nil, err
	}
	opts = append(append(opts, b.partOptions...), bus.LogConnectionEvents(log)...)
	nc, js, err := bus.Connect(b.URL, b.Conn.Opts.Name+"/"+user.Name, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("nats user %s: %w", user.Name, err)
	}
	part := &Bus{URL: b.URL, Conn: nc, JetStream: js, Publisher: bus.NewPublisher(js), Streams: b.Streams, embedded: b.embedded,
		users: b.users, borrowed: true}
	return part, part.Close, nil
}

// InProcess is how a client of this process connects to the embedded server without a socket; empty when
// the server is external.
func (b *Bus) InProcess() []nats.Option {
	if b.embedded == nil {
		return nil
	}
	return []nats.Option{b.embedded.InProcess()}
}

// OpenBus connects to (or embeds) NATS and provisions fleetflow's streams.
func OpenBus(ctx context.Context, opts BusOptions, name string, log *slog.Logger) (*Bus, error) {
	b := &Bus{URL: opts.URL, Streams: opts.Streams, users: opts.Users}
	var clientOpts []nats.Option
	if b.URL == "" {
		if !opts.Auth.IsZero() {
			return nil, errors.New("nats credentials and TLS settings apply to an external server: give --nats-url too")
		}
		if opts.Streams.Replicas > 1 {
			return nil, fmt.Errorf("stream replicas %d need an external JetStream cluster (--nats-url): the embedded server is one node",
				opts.Streams.Replicas)
		}
		if opts.DataDir == "" {
			return nil, errors.New("embedded nats needs a data directory (--data-dir)")
		}
		storeDir := filepath.Join(opts.DataDir, "jetstream")
		if err := os.MkdirAll(storeDir, 0o755); err != nil {
			return nil, fmt.Errorf("jetstream store %s: %w", storeDir, err)
		}
		listen := opts.Listen
		if listen == "" {
			listen = "127.0.0.1:0"
		}
		embedded, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: storeDir, Listen: listen, Users: opts.Users.ServerUsers()})
		if err != nil {
			return nil, err
		}
		b.embedded = embedded
		b.URL = embedded.ClientURL()
		log.Info("embedded NATS JetStream started", "url", b.URL, "store", storeDir)
		// The placer and the other parts of this process talk to an embedded server in process.
		clientOpts = b.InProcess()
		b.partOptions = b.InProcess()
		if admin := opts.Users.Get(natsauth.Admin, ""); admin != nil {
			auth, err := bus.NkeySeedOptions(admin.Seed)
			if err != nil {
				b.Close()
				return nil, err
			}
			clientOpts = append(clientOpts, auth...)
		}
	} else {
		auth, err := opts.Auth.Options()
		if err != nil {
			return nil, err
		}
		clientOpts = auth
		b.partOptions = auth // TLS only: with users, no other credentials are given
		if admin := opts.Users.Get(natsauth.Admin, ""); admin != nil {
			if opts.Auth.CredsFile != "" || opts.Auth.NkeyFile != "" {
				return nil, errors.New("nats users: the bus connects as their admin; give no creds or nkey file too")
			}
			adminOpts, err := bus.NkeySeedOptions(admin.Seed)
			if err != nil {
				return nil, err
			}
			clientOpts = append(clientOpts, adminOpts...)
		} else if opts.Users != nil {
			return nil, errors.New("nats users: no admin among them, to provision the streams as")
		}
	}
	nc, js, err := connectWaiting(ctx, b.URL, name, append(clientOpts, bus.LogConnectionEvents(log)...), log)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.Conn, b.JetStream, b.Publisher = nc, js, bus.NewPublisher(js)
	if err := bus.ProvisionStreams(ctx, js, opts.Streams, log); err != nil {
		b.Close()
		return nil, err
	}
	b.unchecked = append(b.unchecked,
		observe.AddLiveness("nats-open", func() error {
			if nc.IsClosed() {
				return errors.New("the connection to " + b.URL + " closed for good")
			}
			return nil
		}),
		observe.AddReadiness("nats-connected", func() error {
			if !nc.IsConnected() {
				return fmt.Errorf("not connected to %s (%s)", b.URL, nc.Status())
			}
			return nil
		}))
	return b, nil
}

// connectWaiting connects to NATS, waiting while no server answers at url (one starting after this part, or down
// for a while), as the connection waits out an outage once made: a part started before its server, as a
// Deployment's pods may be, would otherwise exit and crash-loop. Until connected, /readyz says so. Any other
// failure (credentials refused, a bad certificate) is returned at once: waiting would not cure it.
func connectWaiting(ctx context.Context, url, name string, options []nats.Option, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	waiting := errors.New("connecting to " + url)
	var state atomic.Pointer[error]
	state.Store(&waiting)
	defer observe.AddReadiness("nats-connecting", func() error {
		if err := state.Load(); err != nil {
			return *err
		}
		return nil
	})()
	delay, warned := connectRetryFirst, false
	for {
		nc, js, err := bus.Connect(url, name, options...)
		if err == nil {
			if warned {
				log.Info("connected to nats", "url", url)
			}
			return nc, js, nil
		}
		if !unanswered(err) {
			return nil, nil, err
		}
		state.Store(&err)
		if !warned {
			log.Warn("no nats server answers; waiting for one", "url", url, "error", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("%w (gave up waiting: %w)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, connectRetryMax)
	}
}

// unanswered tells a connection no server answered (refused, or a dial that timed out), which waiting may cure,
// from one a server refused (credentials, a certificate) or a name that does not resolve, which it would not.
func unanswered(err error) bool {
	var netErr net.Error
	return errors.Is(err, nats.ErrNoServers) || errors.Is(err, nats.ErrTimeout) ||
		errors.As(err, &netErr) && netErr.Timeout()
}

// connectRetryFirst and connectRetryMax bound the wait between two attempts to reach a NATS server at start.
var (
	connectRetryFirst = 250 * time.Millisecond
	connectRetryMax   = 5 * time.Second
)

// OnClose adds what Close does first, for what the process holds as long as its bus.
func (b *Bus) OnClose(f func()) { b.unchecked = append(b.unchecked, f) }

// Close drains the connection and stops the embedded server, if any.
func (b *Bus) Close() { b.closed.Do(b.close) }

func (b *Bus) close() {
	for _, remove := range b.unchecked {
		remove()
	}
	if b.Conn != nil {
		_ = b.Conn.Drain()
		b.Conn.Close()
	}
	if b.embedded != nil && !b.borrowed {
		b.embedded.Shutdown()
	}
}

// RunProducer publishes control-plane changes until ctx is done: namespaces, clusters, policies, RIs,
// and workloads of the given kinds, of every built-in RI's kind, and of every kind a policy or an RI names.
func RunProducer(ctx context.Context, b *Bus, controlPlane *kube.Clients, kinds []schema.GroupVersionKind, skipped *regexp.Regexp,
	log *slog.Logger) error {
	p := &producers.ControlPlaneProducer{Clients: controlPlane, Publisher: b.Publisher, Log: log.With("component", "producer"),
		Known: KnownObjects(b.JetStream), SkippedNamespaces: skipped}
	p.AddKind(producers.NamespaceKind, producers.NamespaceFamily)
	p.AddKind(producers.ClusterKind, producers.ClusterFamily)
	p.AddKind(producers.SchedulePolicyKind, producers.PolicyFamily)
	p.AddKind(producers.ResourceInterfaceKind, producers.ResourceInterfaceFamily)
	for _, gvk := range kinds {
		p.AddKind(gvk, producers.WorkloadFamily)
	}
	return p.Run(ctx)
}

// DefaultSkippedNamespaces are the control-plane namespaces whose workloads fleetflow leaves alone unless told
// otherwise: Kubernetes' own and fleetflow's, whose Deployments are the control plane's, not the fleet's.
var DefaultSkippedNamespaces = []string{"kube-.*", SystemNamespace}

// SkippedNamespaces compiles namespace patterns (regular expressions, each matching a whole name) into one
// matcher; nil when there are none.
func SkippedNamespaces(patterns []string) (*regexp.Regexp, error) {
	var parts []string
	for _, p := range patterns {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if _, err := regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("namespace pattern %q: %w", p, err)
		}
		parts = append(parts, "(?:"+p+")")
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return regexp.Compile("^(?:" + strings.Join(parts, "|") + ")$")
}

// DefaultSkipped is DefaultSkippedNamespaces compiled.
func DefaultSkipped() *regexp.Regexp {
	re, err := SkippedNamespaces(DefaultSkippedNamespaces)
	if err != nil {
		panic(err) // the defaults are constant patterns, checked by the tests
	}
	return re
}

// KnownObjects returns the objects whose last event in the state stream, on the subjects filter selects, is a
// change: the objects the streams hold as existing (see producers.ControlPlaneProducer.Known).
func KnownObjects(js jetstream.JetStream) func(ctx context.Context, filter string) ([]producers.KnownObject, error) {
	return func(ctx context.Context, filter string) ([]producers.KnownObject, error) {
		var known []producers.KnownObject
		err := lastEvents(ctx, js, func(_ string, payload schemas.Payload) {
			if changed, ok := payload.(*schemas.ObjectChanged); ok {
				rv, _, _ := unstructured.NestedString(changed.Object, "metadata", "resourceVersion")
				known = append(known, producers.KnownObject{Ref: changed.Ref(), ResourceVersion: rv})
			}
		}, filter)
		return known, err
	}
}

// KnownNodes returns the names of cluster's nodes whose last event in the state stream is a node state (see
// producers.ClusterProducer.KnownNodes).
func KnownNodes(js jetstream.JetStream, cluster string) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		var known []string
		err := lastEvents(ctx, js, func(_ string, payload schemas.Payload) {
			if node, ok := payload.(*schemas.NodeState); ok {
				known = append(known, node.Name)
			}
		}, schemas.SubjectEventsPrefix+".node."+schemas.Token(cluster)+".*")
		return known, err
	}
}

// KnownPlaced returns the last state the state stream holds of each copy placed in cluster (see
// producers.ClusterProducer.KnownPlaced).
func KnownPlaced(js jetstream.JetStream, cluster string) func(ctx context.Context) ([]schemas.WorkloadStatus, error) {
	return func(ctx context.Context) ([]schemas.WorkloadStatus, error) {
		var known []schemas.WorkloadStatus
		err := lastEvents(ctx, js, func(_ string, payload schemas.Payload) {
			if status, ok := payload.(*schemas.WorkloadStatus); ok {
				known = append(known, *status)
			}
		}, schemas.SubjectEventsPrefix+".status."+schemas.Token(cluster)+".>")
		return known, err
	}
}

// lastEvents hands each last event the state stream holds on the subjects filters select to take, skipping
// what does not decode.
func lastEvents(ctx context.Context, js jetstream.JetStream, take func(eventType string, payload schemas.Payload), filters ...string) error {
	return bus.ReadEvents(ctx, js, schemas.StreamState, jetstream.OrderedConsumerConfig{FilterSubjects: filters,
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy}, take)
}

// BuiltinKinds are the kinds the built-in RIs describe.
func BuiltinKinds() ([]schema.GroupVersionKind, error) {
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in resource interfaces: %w", err)
	}
	kinds := make([]schema.GroupVersionKind, 0, len(builtins))
	for _, ri := range builtins {
		kinds = append(kinds, ri.GVK)
	}
	return kinds, nil
}

// PlacerTickInterval is how often the placer publishes its clock.
const PlacerTickInterval = 2 * time.Second

// RunPlacer runs the placer until ctx is done. Only one placer may work on the streams at a time, so
// RunPlacer first takes the placer lease (a key with a TTL in a JetStream key-value bucket), standing by
// while another placer holds it; the holder renews it, and a placer that loses it stops and stands by
// again. As leader it rebuilds the placer's view from the state stream, then consumes fleet events and
// publishes verdicts and decisions, with a tick into its own input every PlacerTickInterval so heartbeat
// timeouts and pending pods are judged as events.
func RunPlacer(ctx context.Context, b *Bus, cfg placer.PlacerConfig, log *slog.Logger) error {
	log = log.With("component", "placer")
	ttl := cfg.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	// A placer standing by is well; one that took the lease is not ready until its view is rebuilt.
	var rebuilding atomic.Bool
	defer observe.AddReadiness("placer", func() error {
		if rebuilding.Load() {
			return errors.New("rebuilding its view from the state stream")
		}
		return nil
	})()
	defer observe.PlacerLeader.Set(0)
	// One holder name for this placer's whole life: one that lost the lease while the server was away (its
	// renewal and its release unanswered) finds its own name on the key when the server is back, and takes the
	// lease again at once rather than standing by until its own key expires, with no placer at work.
	holder := leaseHolder()
	for {
		lease, err := acquireLease(ctx, b, schemas.LeasePlacer, holder, ttl, log)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		leaderCtx, cancel := context.WithCancelCause(ctx)
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			if err := lease.keep(leaderCtx, ttl); err != nil {
				cancel(err)
			}
		}()
		rebuilding.Store(true)
		err = runPlacerAsLeader(leaderCtx, b, cfg, log, leadership{held: lease.held, lost: cancel},
			func() {
				rebuilding.Store(false)
				observe.PlacerLeader.Set(1)
			})
		rebuilding.Store(false)
		observe.PlacerLeader.Set(0)
		cause := context.Cause(leaderCtx)
		cancel(nil)
		<-renewed
		lease.release()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(cause, errLeaseLost):
			log.Warn("lost the placer lease; standing by", "error", cause)
			continue
		case bus.Transient(ctx, err):
			// The streams did not answer while it took up the lead (rebuilding its view, creating its consumer):
			// the elections after a node died or was cut off. It starts over as a new leader would; ending here
			// would take every other part of the process down with it.
			log.Warn("the streams did not answer while taking up the lead; starting over", "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(consumerRecreateDelay):
			}
			continue
		case errors.Is(err, bus.ErrConsumerClosed):
			// Its durable consumer was deleted: start over as a new leader would, rebuilding the view and
			// creating the consumer again.
			log.Warn("the placer's consumer stopped delivering; starting over", "error", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(consumerRecreateDelay):
			}
			continue
		case err != nil:
			return err
		}
	}
}

// runPlacerAsLeader runs the placer while this process holds the lease, which lead checks and ends. rebuilt is
// called once the view is rebuilt, when the placer starts placing.
func runPlacerAsLeader(ctx context.Context, b *Bus, cfg placer.PlacerConfig, log *slog.Logger, lead leadership,
	rebuilt func()) error {
	builtins, err := karta.Builtins()
	if err != nil {
		return fmt.Errorf("built-in resource interfaces: %w", err)
	}
	// One name for this leadership, in its fence records and its ticks: a replay tells takeovers by it.
	name := leaseHolder()
	fence, err := takeFence(ctx, b, name, log)
	if err != nil {
		lead.lost(err)
		return err
	}
	publisher := fencedPublisher{fence: fence, lost: lead.lost}
	// Each cluster's node reports are bounded where they arrive, before they are decoded.
	nodeReports := placer.NewNodeReports(cfg)
	placer, err := placer.NewPlacer(publisher, karta.NewRegistry(builtins...), cfg, log)
	if err != nil {
		return err
	}
	events, err := b.JetStream.Stream(ctx, schemas.StreamEvents)
	if err != nil {
		return fmt.Errorf("placer: %w", err)
	}
	placer.SetEpoch(strconv.FormatInt(events.CachedInfo().Created.UnixNano(), 36))
	observe.SetFleetSource(placer.FleetStats)
	defer observe.SetFleetSource(nil)
	if err := placer.Rebuild(ctx, b.JetStream); err != nil {
		return err
	}
	rebuilt()
	stream, consumerCfg := streams.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(ctx, b.JetStream, stream, consumerCfg)
	if err != nil {
		return err
	}
	stateStream, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		return fmt.Errorf("placer: %w", err)
	}
	grace := cfg.StatePruneGrace
	if grace <= 0 {
		grace = statePruneGrace
	}
	pruner := newStatePruner(stateStream, grace, log)
	go pruner.run(ctx)
	// Stopped and waited for when the leadership ends, so none of its ticks is sent after.
	tickCtx, stopTicks := context.WithCancel(ctx)
	var ticking sync.WaitGroup
	defer func() {
		stopTicks()
		ticking.Wait()
	}()
	ticking.Go(func() { publishTicks(tickCtx, publisher, cfg.Settings(), name, log) })
	floor := &atomic.Uint64{}
	go followAckFloor(ctx, consumer, PlacerTickInterval, floor, log)
	flush := func(ctx context.Context) error {
		if err := placer.Flush(ctx); err != nil {
			return err
		}
		pruner.add(placer.TakeGone(), placer.TakeGoneFleet())
		// Every batch, not only when the floor moved: one call forgets a bounded number, and what is left
		// below an unchanged floor goes over the next batches.
		f := floor.Load()
		if n := placer.ForgetAppliedThrough(f); n > 0 {
			log.Debug("forgot applied events at or below the acknowledgement floor", "floor", f, "subjects", n)
		}
		return nil
	}
	loop := &bus.ConsumeLoop{Consumer: consumer, Handle: fenced(lead.held, lead.lost, placer.Stage), Flush: flush,
		Refuse: nodeReports.Refuse, DeadLetters: b.JetStream, Log: log}
	return loop.Run(ctx)
}

// followAckFloor keeps floor at the acknowledgement floor of the placer's durable consumer, read every interval,
// so the placer can forget the events JetStream will not deliver again (Placer.ForgetAppliedThrough). A read
// that fails keeps the last floor: forgetting later only costs memory for a while.
func followAckFloor(ctx context.Context, consumer jetstream.Consumer, interval time.Duration, floor *atomic.Uint64,
	log *slog.Logger) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		info, err := consumer.Info(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Debug("placer consumer not read; keeping the last acknowledgement floor", "error", err)
			}
			continue
		}
		floor.Store(info.AckFloor.Stream)
	}
}

// publishTicks publishes the placer's clock; term names this leadership, one rebuilt view of the fleet.
func publishTicks(ctx context.Context, publisher placer.EventPublisher, settings *schemas.PlacerSettings, term string, log *slog.Logger) {
	ticker := time.NewTicker(PlacerTickInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			id := fmt.Sprintf("tick/%d", now.UnixNano()/int64(PlacerTickInterval))
			event, err := codec.NewEvent(schemas.TypePlacerTick, schemas.SourcePlacer, schemas.SubjectPlacerTick, id,
				&schemas.PlacerTick{Time: now.UTC(), Settings: settings, Placer: term})
			if err == nil {
				_, err = publisher.Publish(ctx, schemas.SubjectPlacerTick, event)
			}
			if err != nil && ctx.Err() == nil {
				log.Warn("placer tick not published", "error", err)
			}
		}
	}
}

// consumerRecreateDelay is the pause before a durable consumer that stopped delivering is created again.
const consumerRecreateDelay = time.Second

// consume runs loops made by newLoop over the durable consumer cfg of stream until ctx is done. A consumer
// that stops delivering (deleted by an operator, or with its stream) is created again and consumed from
// where its new configuration starts, so a part never goes on running while it receives nothing.
func consume(ctx context.Context, b *Bus, stream string, cfg jetstream.ConsumerConfig, log *slog.Logger,
	newLoop func(jetstream.Consumer) *bus.ConsumeLoop) error {
	for {
		consumer, err := bus.EnsureConsumer(ctx, b.JetStream, stream, cfg)
		if err != nil {
			return err
		}
		err = newLoop(consumer).Run(ctx)
		if !errors.Is(err, bus.ErrConsumerClosed) || ctx.Err() != nil {
			return err
		}
		log.Warn("durable consumer stopped delivering; creating it again", "consumer", cfg.Durable, "stream", stream, "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(consumerRecreateDelay):
		}
	}
}

// RunApplier carries out the decisions for one cluster until ctx is done: it applies and deletes the copies,
// and the cluster's pinner (one elected among the replicas) pins the pods of copies whose policy pins pods.
func RunApplier(ctx context.Context, b *Bus, cluster string, clients *kube.Clients, log *slog.Logger) error {
	stream, cfg := streams.ApplierConsumer(cluster)
	decisions, err := b.JetStream.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("applier for %s: %w", cluster, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel(nil)
		wg.Wait()
	}()
	wg.Go(func() {
		pinner := &pinner.Pinner{Cluster: cluster, Clients: clients, Log: log.With("component", "pinner", "cluster", cluster)}
		if err := pinner.Run(ctx); err != nil && ctx.Err() == nil {
			cancel(err)
		}
	})
	log = log.With("component", "applier", "cluster", cluster)
	applier := &applier.Applier{Cluster: cluster, Clients: clients, Publisher: b.Publisher, Log: log,
		Superseded: Superseded(decisions), Latest: latestDecision(decisions)}
	err = consume(ctx, b, stream, cfg, log, func(consumer jetstream.Consumer) *bus.ConsumeLoop {
		return &bus.ConsumeLoop{Consumer: consumer, Handle: applier.Handle, GiveUp: applier.GiveUp, DeadLetters: b.JetStream,
			Log: log}
	})
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return err
}

// EventsReportingController is who the status writer's Events say reported them.
const EventsReportingController = "fleetflow.io/status-writer"

// RunStatusWriter copies workload status and placement outcomes back to the control plane until ctx is done.
func RunStatusWriter(ctx context.Context, b *Bus, controlPlane *kube.Clients, heartbeatTimeout time.Duration, log *slog.Logger) error {
	log = log.With("component", "status")
	state, err := b.JetStream.Stream(ctx, schemas.StreamState)
	if err != nil {
		return fmt.Errorf("status writer: %w", err)
	}
	// What the state stream holds up to here the writer restores; what comes after, it follows.
	restoredThrough := state.CachedInfo().State.LastSeq
	if info, err := state.Info(ctx); err == nil {
		restoredThrough = info.State.LastSeq
	}
	writer, err := NewStatusWriter(ctx, b, controlPlane, log)
	if err != nil {
		return err
	}
	writer.HeartbeatTimeout = heartbeatTimeout
	if controlPlane.Core != nil { // clients with a dynamic client alone (tests) record no Events
		if writer.Events, err = kube.NewEventRecorder(ctx, controlPlane, EventsReportingController, kube.EventLimits{}); err != nil {
			return fmt.Errorf("status writer: %w", err)
		}
	}
	newLoop := func(consumer jetstream.Consumer) *bus.ConsumeLoop {
		return &bus.ConsumeLoop{Consumer: consumer, Handle: writer.Handle, DeadLetters: b.JetStream, Log: log}
	}
	// Events (statuses, verdicts of their own, outcomes, the fleet) and decisions (the Placed verdicts they
	// carry) are two streams, consumed side by side; the writer orders verdicts by their sequence.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan error, 1)
	go func() { followed <- followFleet(ctx, state, restoredThrough+1, writer, log) }()
	decisionsDone := make(chan error, 1)
	go func() {
		stream, cfg := streams.StatusDecisionsConsumer()
		err := consume(ctx, b, stream, cfg, log, func(consumer jetstream.Consumer) *bus.ConsumeLoop {
			loop := newLoop(consumer)
			// Most decisions carry no verdict, and their objects are not worth decoding to find that out.
			loop.Wants = func(h nats.Header) bool { return bus.HasExtension(h, schemas.ExtensionVerdict) }
			return loop
		})
		cancel()
		decisionsDone <- err
	}()
	stream, cfg := streams.StatusConsumer()
	err = consume(ctx, b, stream, cfg, log, func(consumer jetstream.Consumer) *bus.ConsumeLoop {
		loop := newLoop(consumer)
		// Of the workloads' events, the writer wants only deletions (their WorkloadPlacement goes with them);
		// changes, with their whole objects, are acknowledged unread.
		loop.Wants = func(h nats.Header) bool { return bus.EventType(h) != schemas.TypeWorkloadChanged }
		return loop
	})
	cancel()
	return errors.Join(err, <-decisionsDone, <-followed)
}

// followFleet hands writer.Follow every event of schemas.StatusFleetSubjects the state stream stores from
// sequence start on, until ctx is done. Each status writer reads them all for itself: on the consumer its
// replicas share, each would see only some of a cluster's nodes, and write Cluster statuses that flip
// between the replicas' partial sums at every heartbeat. A write that fails is not retried: the next
// heartbeat or tick writes the cluster's status again.
func followFleet(ctx context.Context, state jetstream.Stream, start uint64, writer *status.StatusWriter, log *slog.Logger) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: schemas.StatusFleetSubjects,
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: start}
	return followState(ctx, state, cfg, "status writer: follow the fleet", func(msg jetstream.Msg) {
		event, err := bus.Decode(msg.Headers(), msg.Data())
		if err != nil {
			return
		}
		payload, err := codec.DecodePayload(event)
		if err != nil {
			return
		}
		d := bus.Delivery{Event: event, Payload: payload, Subject: msg.Subject(), Attempt: 1}
		if meta, err := msg.Metadata(); err == nil {
			d.StreamSequence, d.Stored = meta.Sequence.Stream, meta.Timestamp
		}
		if err := writer.Follow(ctx, d); err != nil && ctx.Err() == nil {
			log.Warn("fleet status not written; the next heartbeat writes it", "subject", d.Subject, "error", err)
		}
	})
}

// followState hands handle each message the state stream's ordered consumer of cfg delivers, until ctx is done;
// what names the reading in errors. A missed heartbeat has the ordered consumer created again, and the reading
// goes on.
func followState(ctx context.Context, state jetstream.Stream, cfg jetstream.OrderedConsumerConfig, what string,
	handle func(jetstream.Msg)) error {
	consumer, err := state.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	messages, err := consumer.Messages(bus.PullOptions()...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	go func() {
		<-ctx.Done()
		messages.Stop()
	}()
	for {
		msg, err := messages.Next()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				return nil
			}
			continue
		}
		handle(msg)
	}
}

// NewStatusWriter is a status writer on the control plane and the streams of b, as RunStatusWriter runs it:
// with the built-in RIs, and skipping workload statuses the events stream has newer ones of.
func NewStatusWriter(ctx context.Context, b *Bus, controlPlane *kube.Clients, log *slog.Logger) (*status.StatusWriter, error) {
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in resource interfaces: %w", err)
	}
	stream, _ := streams.StatusConsumer()
	events, err := b.JetStream.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("status writer: %w", err)
	}
	writer := status.NewStatusWriter(controlPlane, karta.NewRegistry(builtins...), log)
	if err := restoreStatusWriter(ctx, b, writer); err != nil {
		return nil, err
	}
	writer.Superseded = Superseded(events)
	writer.LastStatus = func(ctx context.Context, subject string) (*schemas.WorkloadStatus, error) {
		status, _, err := lastPayload[*schemas.WorkloadStatus](ctx, events, subject)
		return status, err
	}
	writer.LastVerdict = func(ctx context.Context, subject string) (*schemas.PlacementVerdict, error) {
		verdict, _, err := lastPayload[*schemas.PlacementVerdict](ctx, events, subject)
		return verdict, err
	}
	return writer, nil
}

// restoreStatusWriter hands the writer what the state stream holds of RIs, clusters and nodes (see
// status.StatusWriter.Restore).
func restoreStatusWriter(ctx context.Context, b *Bus, writer *status.StatusWriter) error {
	err := bus.ReadStoredEvents(ctx, b.JetStream, schemas.StreamState, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{schemas.SubjectEventsPrefix + ".resourceinterface.>", schemas.SubjectEventsPrefix + ".cluster.>",
			schemas.SubjectEventsPrefix + ".node.>"},
		DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy}, writer.Restore)
	if err != nil {
		return fmt.Errorf("status writer: %w", err)
	}
	return nil
}

// Superseded reports whether stream holds a message on subject after sequence seq (see
// status.StatusWriter.Superseded and applier.Applier.Superseded); a subject with no message left (aged
// out) holds none.
func Superseded(stream jetstream.Stream) func(ctx context.Context, subject string, seq uint64) (bool, error) {
	return func(ctx context.Context, subject string, seq uint64) (bool, error) {
		last, err := bus.LastMessage(ctx, stream, subject)
		return last != nil && last.Sequence > seq, err
	}
}

// latestDecision returns the newest decision stream holds on a subject, with its sequence (see
// applier.Applier.Latest); nil when it holds none, or none that decodes.
func latestDecision(stream jetstream.Stream) func(ctx context.Context, subject string) (*schemas.PlacementDecided, uint64, error) {
	return func(ctx context.Context, subject string) (*schemas.PlacementDecided, uint64, error) {
		return lastPayload[*schemas.PlacementDecided](ctx, stream, subject)
	}
}

// lastPayload is the payload of stream's last message on subject, with its sequence, when it is a T; the zero T
// when the stream holds none on subject, or one that does not decode as a T (its own delivery is terminated as
// such), which gives a reader nothing newer to go by.
func lastPayload[T schemas.Payload](ctx context.Context, stream jetstream.Stream, subject string) (T, uint64, error) {
	var zero T
	msg, err := bus.LastMessage(ctx, stream, subject)
	if err != nil || msg == nil {
		return zero, 0, err
	}
	event, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		return zero, 0, nil //nolint:nilerr // not a fleetflow event: nothing newer to go by
	}
	payload, err := codec.DecodePayload(event)
	if err != nil {
		return zero, 0, nil //nolint:nilerr // as above
	}
	typed, ok := payload.(T)
	if !ok {
		return zero, 0, nil
	}
	return typed, msg.Sequence, nil
}

// RunClusterProducer runs the producer of one workload cluster until ctx is done. Besides kinds, it reports
// the placed objects of every kind a ResourceInterface applied to the control plane describes, as the state
// stream holds them and as they come: without them, placed objects of a kind only a user's RI describes
// reported no status and no pending pods.
func RunClusterProducer(ctx context.Context, b *Bus, cluster string, clients *kube.Clients, kinds []schema.GroupVersionKind,
	heartbeat time.Duration, log *slog.Logger) error {
	log = log.With("component", "cluster-producer") // the producer adds the cluster itself
	p := &producers.ClusterProducer{Cluster: cluster, Clients: clients, Publisher: b.Publisher, Kinds: kinds,
		KnownNodes: KnownNodes(b.JetStream, cluster), KnownPlaced: KnownPlaced(b.JetStream, cluster), Heartbeat: heartbeat, Log: log}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan error, 1)
	go func() { followed <- followNamedKinds(ctx, b.JetStream, p.AddKind, p.AddGroupKind) }()
	err := p.Run(ctx)
	cancel()
	if ferr := <-followed; ferr != nil && ctx.Err() == nil {
		log.Warn("stopped following the kinds ResourceInterfaces describe and policies select", "cluster", cluster, "error", ferr)
	}
	return err
}

// followNamedKinds hands add the kind of every ResourceInterface the state stream holds, and addGroupKind every
// kind a SchedulePolicy selects (named without a version), then those of every one applied since, until ctx is
// done. A cluster producer watches their placed copies: without it, a copy of a kind only a policy names (a
// Duplicate ConfigMap, a CRD) deleted in its cluster was never seen gone, nor applied again.
func followNamedKinds(ctx context.Context, js jetstream.JetStream, add func(schema.GroupVersionKind),
	addGroupKind func(schema.GroupKind)) error {
	stream, err := js.Stream(ctx, schemas.StreamState)
	if err != nil {
		return fmt.Errorf("follow resource interfaces: %w", err)
	}
	handle := func(msg jetstream.Msg) {
		event, err := bus.Decode(msg.Headers(), msg.Data())
		if err != nil || event.Type() != schemas.TypeResourceInterfaceChanged && event.Type() != schemas.TypePolicyChanged {
			return
		}
		payload, err := codec.DecodePayload(event)
		if err != nil {
			return
		}
		changed, ok := payload.(*schemas.ObjectChanged)
		if !ok {
			return
		}
		if event.Type() == schemas.TypePolicyChanged {
			for _, gk := range producers.SelectedKinds(changed.Object) {
				addGroupKind(gk)
			}
		} else if gvk, ok := producers.DescribedKind(changed.Object); ok {
			add(gvk)
		}
	}
	// One ordered consumer per filter: a consumer of one filter is created on a subject that names it, which
	// NATS permissions can allow a cluster's producer (internal/natsauth) without letting it read the rest.
	filters := []string{schemas.SubjectEventsPrefix + ".resourceinterface.>", schemas.SubjectEventsPrefix + ".policy.>"}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(filters))
	for _, filter := range filters {
		cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy}
		go func() {
			err := followState(ctx, stream, cfg, "follow "+filter, handle)
			cancel() // one that cannot follow stops the other: the caller learns it
			errs <- err
		}()
	}
	var followErr error
	for range filters {
		followErr = errors.Join(followErr, <-errs)
	}
	return followErr
}

// ApplierDrained reports whether a cluster's applier has carried out every decision published to it: its
// durable consumer has nothing left to deliver and nothing delivered waiting for an acknowledgement.
func ApplierDrained(ctx context.Context, b *Bus, cluster string) (bool, error) {
	stream, cfg := streams.ApplierConsumer(cluster)
	consumer, err := b.JetStream.Consumer(ctx, stream, cfg.Durable)
	if err != nil {
		return false, fmt.Errorf("applier of cluster %s: %w", cluster, err)
	}
	info, err := consumer.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("applier of cluster %s: %w", cluster, err)
	}
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

// RunClusterParts runs what fleetflow does for one workload cluster: the producer of its nodes, APIs,
// heartbeats and workload statuses, and the applier of its decisions (with its pinner). A heartbeat interval of zero means
// the producer's default. Once retired is closed (its Cluster was deleted) the producer stops and the applier
// goes on, to carry out the Deletes of the cluster's copies (see ClusterRunner).
func RunClusterParts(ctx context.Context, b *Bus, cluster string, clients *kube.Clients, kinds []schema.GroupVersionKind,
	heartbeat time.Duration, log *slog.Logger, retired <-chan struct{}) error {
	return runClusterParts(ctx, b, b, cluster, clients, kinds, heartbeat, log, retired)
}

// runClusterParts is RunClusterParts with the producer on producerBus and the applier on applierBus, each its
// part's NATS user.
func runClusterParts(ctx context.Context, producerBus, applierBus *Bus, cluster string, clients *kube.Clients,
	kinds []schema.GroupVersionKind, heartbeat time.Duration, log *slog.Logger, retired <-chan struct{}) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	producing, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	go func() {
		select {
		case <-retired:
			stopProducing()
		case <-producing.Done():
		}
	}()
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := RunClusterProducer(producing, producerBus, cluster, clients, kinds, heartbeat, log); err != nil && producing.Err() == nil {
			cancel(fmt.Errorf("cluster producer %s: %w", cluster, err))
		}
	})
	wg.Go(func() {
		if err := RunApplier(ctx, applierBus, cluster, clients, log); err != nil && ctx.Err() == nil {
			cancel(fmt.Errorf("applier %s: %w", cluster, err))
		}
	})
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// AllInOne is everything fleetflow run starts: the control-plane producer, the placer, the status writer,
// and, for every Cluster registered on the control plane, that cluster's producer and applier.
type AllInOne struct {
	ControlPlane *kube.Clients
	// Kinds are workload kinds to watch besides the built-in RIs' kinds and those policies and RIs name.
	Kinds  []schema.GroupVersionKind
	Placer placer.PlacerConfig
	// NoPlacer leaves the placer out, for a placer that runs elsewhere.
	NoPlacer bool
	// SkippedNamespaces match the control-plane namespaces whose workloads are left alone (RunProducer); nil
	// skips none. DefaultSkipped is what fleetflow run skips unless told otherwise.
	SkippedNamespaces *regexp.Regexp
}

// Run runs every part on b until ctx is done or one of them fails.
func (a *AllInOne) Run(ctx context.Context, b *Bus, log *slog.Logger) error {
	kinds, err := BuiltinKinds()
	if err != nil {
		return err
	}
	kinds = append(kinds, a.Kinds...)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	// Each part works as its own NATS user when the server has them (b.Users).
	start := func(name string, role natsauth.Role, run func(*Bus) error) {
		wg.Go(func() {
			part, release, err := b.As(role, "", log)
			if err == nil {
				err = run(part)
				release()
			}
			if err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("%s: %w", name, err))
			}
		})
	}
	start("producer", natsauth.Producer, func(b *Bus) error {
		return RunProducer(ctx, b, a.ControlPlane, kinds, a.SkippedNamespaces, log)
	})
	if !a.NoPlacer {
		start("placer", natsauth.Placer, func(b *Bus) error { return RunPlacer(ctx, b, a.Placer, log) })
	}
	start("status", natsauth.Status, func(b *Bus) error {
		return RunStatusWriter(ctx, b, a.ControlPlane, a.Placer.HeartbeatTimeout, log)
	})
	manager := &ClusterManager{ControlPlane: a.ControlPlane, Log: log.With("component", "clusters"),
		Run: func(ctx context.Context, name string, clients *kube.Clients, retired <-chan struct{}) error {
			producerBus, releaseProducer, err := b.As(natsauth.ClusterProducer, name, log)
			if err != nil {
				return err
			}
			defer releaseProducer()
			applierBus, releaseApplier, err := b.As(natsauth.Applier, name, log)
			if err != nil {
				return err
			}
			defer releaseApplier()
			return runClusterParts(ctx, producerBus, applierBus, name, clients, kinds, producers.HeartbeatFor(a.Placer.HeartbeatTimeout),
				log, retired)
		},
		Drained: func(ctx context.Context, cluster string) (bool, error) { return ApplierDrained(ctx, b, cluster) }}
	start("clusters", natsauth.Admin, func(*Bus) error { return manager.Start(ctx) })
	<-ctx.Done()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
