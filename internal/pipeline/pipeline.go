package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/producers"
	"github.com/fleetflow/fleetflow/schemas"
)

// BusOptions say where JetStream is.
type BusOptions struct {
	// URL of an external NATS server; empty embeds one.
	URL string
	// DataDir holds the embedded server's storage (DataDir/jetstream).
	DataDir string
	// Listen is the embedded server's host:port ("127.0.0.1:0" picks a free port).
	Listen  string
	Streams schemas.StreamOptions
}

// Bus is a provisioned JetStream connection, with the embedded server when there is one.
type Bus struct {
	URL       string
	Conn      *nats.Conn
	JetStream jetstream.JetStream
	Publisher *bus.Publisher
	embedded  *bus.Embedded
}

// OpenBus connects to (or embeds) NATS and provisions fleetflow's streams.
func OpenBus(ctx context.Context, opts BusOptions, name string, log *slog.Logger) (*Bus, error) {
	b := &Bus{URL: opts.URL}
	if b.URL == "" {
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
		embedded, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: storeDir, Listen: listen})
		if err != nil {
			return nil, err
		}
		b.embedded = embedded
		b.URL = embedded.ClientURL()
		log.Info("embedded NATS JetStream started", "url", b.URL, "store", storeDir)
	}
	nc, js, err := bus.Connect(b.URL, name)
	if err != nil {
		b.Close()
		return nil, err
	}
	b.Conn, b.JetStream, b.Publisher = nc, js, bus.NewPublisher(js)
	if err := bus.ProvisionStreams(ctx, js, opts.Streams, log); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// Close drains the connection and stops the embedded server, if any.
func (b *Bus) Close() {
	if b.Conn != nil {
		_ = b.Conn.Drain()
		b.Conn.Close()
	}
	if b.embedded != nil {
		b.embedded.Shutdown()
	}
}

// RunProducer publishes control-plane workload events until ctx is done.
func RunProducer(ctx context.Context, b *Bus, controlPlane *kube.Clients, kinds []schema.GroupVersionKind, log *slog.Logger) error {
	p := &producers.ControlPlaneProducer{Clients: controlPlane, Publisher: b.Publisher, Log: log.With("component", "producer")}
	for _, gvk := range kinds {
		p.AddKind(gvk, producers.WorkloadFamily)
	}
	return p.Run(ctx)
}

// RunPlacer consumes workload events and publishes decisions until ctx is done.
func RunPlacer(ctx context.Context, b *Bus, decider consumers.Decider, log *slog.Logger) error {
	log = log.With("component", "placer")
	stream, cfg := schemas.PlacerConsumer()
	consumer, err := bus.EnsureConsumer(ctx, b.JetStream, stream, cfg)
	if err != nil {
		return err
	}
	placer := consumers.NewPlacer(decider, b.Publisher, log)
	loop := &bus.ConsumeLoop{Consumer: consumer, Handle: placer.Handle, Log: log}
	return loop.Run(ctx)
}

// RunApplier carries out the decisions for one cluster until ctx is done.
func RunApplier(ctx context.Context, b *Bus, cluster string, clients *kube.Clients, log *slog.Logger) error {
	log = log.With("component", "applier", "cluster", cluster)
	stream, cfg := schemas.ApplierConsumer(cluster)
	consumer, err := bus.EnsureConsumer(ctx, b.JetStream, stream, cfg)
	if err != nil {
		return err
	}
	applier := &consumers.Applier{Cluster: cluster, Clients: clients, Publisher: b.Publisher, Log: log}
	loop := &bus.ConsumeLoop{Consumer: consumer, Handle: applier.Handle, GiveUp: applier.GiveUp, Log: log}
	return loop.Run(ctx)
}

// RunStatusWriter copies workload status and placement outcomes back to the control plane until ctx is done.
func RunStatusWriter(ctx context.Context, b *Bus, controlPlane *kube.Clients, log *slog.Logger) error {
	log = log.With("component", "status")
	builtins, err := karta.Builtins()
	if err != nil {
		return fmt.Errorf("built-in resource interfaces: %w", err)
	}
	stream, cfg := schemas.StatusConsumer()
	consumer, err := bus.EnsureConsumer(ctx, b.JetStream, stream, cfg)
	if err != nil {
		return err
	}
	writer := consumers.NewStatusWriter(controlPlane, karta.NewRegistry(builtins...), log)
	loop := &bus.ConsumeLoop{Consumer: consumer, Handle: writer.Handle, Log: log}
	return loop.Run(ctx)
}

// ClusterKubeconfig names a workload cluster and its kubeconfig.
type ClusterKubeconfig struct {
	Name       string
	Kubeconfig string
}

// AllInOne is everything fleetflow run starts.
type AllInOne struct {
	ControlPlane *kube.Clients
	Clusters     map[string]*kube.Clients
	Kinds        []schema.GroupVersionKind
	Decider      consumers.Decider
}

// Run runs the producer, the placer and one applier per cluster on b until ctx is done or one of them fails.
func (a *AllInOne) Run(ctx context.Context, b *Bus, log *slog.Logger) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	start := func(name string, run func() error) {
		wg.Go(func() {
			if err := run(); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("%s: %w", name, err))
			}
		})
	}
	start("producer", func() error { return RunProducer(ctx, b, a.ControlPlane, a.Kinds, log) })
	start("placer", func() error { return RunPlacer(ctx, b, a.Decider, log) })
	start("status", func() error { return RunStatusWriter(ctx, b, a.ControlPlane, log) })
	for name, clients := range a.Clusters {
		start("applier "+name, func() error { return RunApplier(ctx, b, name, clients, log) })
	}
	<-ctx.Done()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
