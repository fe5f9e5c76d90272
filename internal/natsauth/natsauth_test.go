package natsauth_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/natsauth"
	"github.com/fleetflow/fleetflow/schemas"
	"github.com/fleetflow/fleetflow/schemas/streams"
)

// refusedWithin bounds how long a refused request is waited for: the server refuses a publish by telling the
// client asynchronously, and the request itself only times out; reportedWithin bounds the wait for that report.
const (
	refusedWithin  = time.Second
	reportedWithin = 5 * time.Second
)

// fleet is an embedded server serving the users of clusters, with fleetflow's streams provisioned by its admin.
type fleet struct {
	t     *testing.T
	url   string
	users *natsauth.Users
}

func newFleet(t *testing.T, clusters ...string) *fleet {
	t.Helper()
	users, err := natsauth.Generate(clusters)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0", Users: users.ServerUsers()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	f := &fleet{t: t, url: srv.ClientURL(), users: users}
	admin := f.connect(natsauth.Admin, "")
	if err := bus.ProvisionStreams(t.Context(), admin.js, streams.DefaultOptions(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return f
}

// client is a connection as one user, with the permission violations the server reported to it.
type client struct {
	t          *testing.T
	nc         *nats.Conn
	js         jetstream.JetStream
	violations chan error
}

func (f *fleet) connect(role natsauth.Role, cluster string) *client {
	f.t.Helper()
	user := f.users.Get(role, cluster)
	if user == nil {
		f.t.Fatalf("no user %s for %q", role, cluster)
	}
	opts, err := bus.NkeySeedOptions(user.Seed)
	if err != nil {
		f.t.Fatal(err)
	}
	c := &client{t: f.t, violations: make(chan error, 100)}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			c.violations <- err
		}
	}))
	c.nc, c.js, err = bus.Connect(f.url, user.Name, opts...)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(c.nc.Close)
	return c
}

// refused fails the test unless the server reports a permission violation on a subject that filter selects
// (err being what the refused operation returned, which must be an error too).
func (c *client) refused(t *testing.T, err error, filter string) {
	t.Helper()
	if err == nil {
		t.Fatalf("allowed, want a permissions violation on %s", filter)
	}
	timeout := time.NewTimer(reportedWithin)
	defer timeout.Stop()
	for {
		select {
		case v := <-c.violations:
			// nats: permissions violation for publish to "<subject>"
			if _, quoted, ok := strings.Cut(v.Error(), `"`); ok && schemas.SubjectMatches(filter, strings.TrimSuffix(quoted, `"`)) {
				return
			}
		case <-timeout.C:
			t.Fatalf("no permissions violation on %s reported (the operation failed with %v)", filter, err)
		}
	}
}

// noViolation fails the test if the server reported any permission violation.
func (c *client) noViolation(t *testing.T) {
	t.Helper()
	select {
	case v := <-c.violations:
		t.Fatalf("unexpected %v", v)
	default:
	}
}

func (c *client) publish(subject string) error {
	ctx, cancel := context.WithTimeout(c.t.Context(), refusedWithin)
	defer cancel()
	_, err := c.js.Publish(ctx, subject, []byte("{}"))
	return err
}

func (c *client) createConsumer(stream string, cfg jetstream.ConsumerConfig) error {
	ctx, cancel := context.WithTimeout(c.t.Context(), refusedWithin)
	defer cancel()
	_, err := c.js.CreateOrUpdateConsumer(ctx, stream, cfg)
	return err
}

func (c *client) lastMessage(stream, subject string) error {
	ctx, cancel := context.WithTimeout(c.t.Context(), refusedWithin)
	defer cancel()
	s, err := c.js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	_, err = s.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	return err
}

var ref = schemas.ObjectRef{APIVersion: "kubeflow.org/v1", Kind: "PyTorchJob", Namespace: "team", Name: "job"}

func TestApplierReadsOnlyItsClustersDecisions(t *testing.T) {
	f := newFleet(t, "a", "b")
	applier := f.connect(natsauth.Applier, "a")
	stream, own := streams.ApplierConsumer("a")
	if err := applier.createConsumer(stream, own); err != nil {
		t.Fatalf("own consumer: %v", err)
	}
	applier.noViolation(t)
	_, others := streams.ApplierConsumer("b")
	ownNameOthersFilter := own
	ownNameOthersFilter.FilterSubject = schemas.ClusterDecisionsFilter("b")
	tests := []struct {
		name string
		cfg  jetstream.ConsumerConfig
		api  string
	}{
		{"B's consumer", others, "$JS.API.CONSUMER.CREATE.FLEETFLOW_DECISIONS.applier-b.fleetflow.decisions.b.>"},
		{"own name on B's filter", ownNameOthersFilter, "$JS.API.CONSUMER.CREATE.FLEETFLOW_DECISIONS.applier-a.fleetflow.decisions.b.>"},
		{"an unfiltered consumer", jetstream.ConsumerConfig{Durable: "applier-a", AckPolicy: jetstream.AckExplicitPolicy},
			"$JS.API.CONSUMER.CREATE.FLEETFLOW_DECISIONS.applier-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			applier.refused(t, applier.createConsumer(stream, tt.cfg), tt.api)
		})
	}
	t.Run("a plain subscribe to B's decisions", func(t *testing.T) {
		sub, err := applier.nc.SubscribeSync(schemas.ClusterDecisionsFilter("b"))
		if err != nil {
			t.Fatal(err)
		}
		// The server refuses a subscription asynchronously; a round trip makes sure it has answered.
		if err := applier.nc.Flush(); err != nil {
			t.Fatal(err)
		}
		_, err = sub.NextMsg(refusedWithin)
		applier.refused(t, err, schemas.ClusterDecisionsFilter("b"))
	})
	t.Run("B's last decision", func(t *testing.T) {
		subject := schemas.DecisionSubject("b", ref)
		applier.refused(t, applier.lastMessage(schemas.StreamDecisions, subject), "$JS.API.DIRECT.GET.FLEETFLOW_DECISIONS."+subject)
	})
	t.Run("its own last decision", func(t *testing.T) {
		if err := applier.lastMessage(schemas.StreamDecisions, schemas.DecisionSubject("a", ref)); err != nil {
			t.Fatal(err)
		}
		applier.noViolation(t)
	})
	t.Run("reports placements only on its cluster", func(t *testing.T) {
		if err := applier.publish(schemas.PlacementSubject("a", ref)); err != nil {
			t.Fatal(err)
		}
		subject := schemas.PlacementSubject("b", ref)
		applier.refused(t, applier.publish(subject), subject)
	})
}

func TestClusterProducerPublishesOnlyAsItsCluster(t *testing.T) {
	f := newFleet(t, "a", "b")
	producer := f.connect(natsauth.ClusterProducer, "a")
	for _, subject := range []string{schemas.NodeSubject("a", "n1"), schemas.ClusterHeartbeatSubject("a"),
		schemas.ClusterAPIsSubject("a"), schemas.WorkloadStatusSubject("a", ref)} {
		if err := producer.publish(subject); err != nil {
			t.Fatalf("publish %s: %v", subject, err)
		}
	}
	producer.noViolation(t)
	tests := []struct{ name, subject string }{
		{"B's node capacity", schemas.NodeSubject("b", "n1")},
		{"B's heartbeat", schemas.ClusterHeartbeatSubject("b")},
		{"B's workload status", schemas.WorkloadStatusSubject("b", ref)},
		{"its own Cluster's spec", schemas.ClusterSpecSubject("a")},
		{"a decision", schemas.DecisionSubject("a", ref)},
		{"a placement", schemas.PlacementSubject("a", ref)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			producer.refused(t, producer.publish(tt.subject), tt.subject)
		})
	}
	t.Run("reads its own nodes, not B's", func(t *testing.T) {
		state, err := producer.js.Stream(t.Context(), schemas.StreamState)
		if err != nil {
			t.Fatal(err)
		}
		own := schemas.SubjectEventsPrefix + ".node.a.*"
		if _, err := state.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{own}}); err != nil {
			t.Fatalf("ordered consumer on %s: %v", own, err)
		}
		producer.noViolation(t)
		others := schemas.SubjectEventsPrefix + ".node.b.*"
		ctx, cancel := context.WithTimeout(t.Context(), refusedWithin)
		defer cancel()
		consumer, err := state.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{others}})
		if err == nil {
			_, err = consumer.Fetch(1, jetstream.FetchMaxWait(refusedWithin))
		}
		producer.refused(t, err, "$JS.API.CONSUMER.CREATE.FLEETFLOW_STATE.*."+others)
	})
}

func TestReadersCannotPublish(t *testing.T) {
	for _, role := range []natsauth.Role{natsauth.Audit, natsauth.UI} {
		t.Run(string(role), func(t *testing.T) {
			f := newFleet(t, "a")
			reader := f.connect(role, "")
			for _, subject := range []string{schemas.WorkloadSubject(ref), schemas.DecisionSubject("a", ref),
				schemas.NodeSubject("a", "n1"), schemas.SubjectPlacerTick, schemas.DeadLetterSubject("placer")} {
				reader.refused(t, reader.publish(subject), subject)
			}
			stream, placer := streams.PlacerConsumer()
			reader.refused(t, reader.createConsumer(stream, placer), "$JS.API.CONSUMER.CREATE.FLEETFLOW_EVENTS.placer")
			ctx, cancel := context.WithTimeout(t.Context(), refusedWithin)
			defer cancel()
			reader.refused(t, reader.js.DeleteStream(ctx, schemas.StreamEvents), "$JS.API.STREAM.DELETE.FLEETFLOW_EVENTS")
		})
	}
}

// TestReadersReadEveryStream: audit reads the history as any third party would, with ordered consumers.
func TestReadersReadEveryStream(t *testing.T) {
	f := newFleet(t, "a")
	placer := f.connect(natsauth.Placer, "")
	if err := placer.publish(schemas.DecisionSubject("a", ref)); err != nil {
		t.Fatal(err)
	}
	reader := f.connect(natsauth.Audit, "")
	for _, stream := range []string{schemas.StreamEvents, schemas.StreamDecisions, schemas.StreamState, schemas.StreamDead} {
		t.Run(stream, func(t *testing.T) {
			s, err := reader.js.Stream(t.Context(), stream)
			if err != nil {
				t.Fatal(err)
			}
			consumer, err := s.OrderedConsumer(t.Context(), jetstream.OrderedConsumerConfig{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := consumer.FetchNoWait(1); err != nil {
				t.Fatal(err)
			}
			reader.noViolation(t)
		})
	}
}

func TestUnknownUserIsRefused(t *testing.T) {
	f := newFleet(t, "a")
	stranger, err := natsauth.NewUser(natsauth.Admin, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := bus.NkeySeedOptions(stranger.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string][]nats.Option{"no credentials": nil, "an nkey the server does not know": opts} {
		t.Run(name, func(t *testing.T) {
			_, _, err := bus.Connect(f.url, "stranger", opts...)
			if !errors.Is(err, nats.ErrAuthorization) {
				t.Fatalf("connect = %v, want %v", err, nats.ErrAuthorization)
			}
		})
	}
}

// TestServerConfigIsWhatAServerEnforces: an external server configured with ServerConfig accepts each part's
// seed and refuses what the embedded server refuses.
func TestServerConfigIsWhatAServerEnforces(t *testing.T) {
	users, err := natsauth.Generate([]string{"a", "b"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	text := "listen: \"127.0.0.1:-1\"\njetstream { store_dir: " + strconv.Quote(filepath.Join(dir, "js")) + " }\n" + users.ServerConfig()
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("the server refuses the configuration: %v\n%s", err, text)
	}
	opts.NoSigs, opts.NoLog = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	if len(opts.Nkeys) != len(users.All) {
		t.Fatalf("server has %d users, want %d", len(opts.Nkeys), len(users.All))
	}
	f := &fleet{t: t, url: srv.ClientURL(), users: users}
	admin := f.connect(natsauth.Admin, "")
	if err := bus.ProvisionStreams(t.Context(), admin.js, streams.DefaultOptions(), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	producer := f.connect(natsauth.ClusterProducer, "a")
	if err := producer.publish(schemas.NodeSubject("a", "n1")); err != nil {
		t.Fatal(err)
	}
	subject := schemas.NodeSubject("b", "n1")
	producer.refused(t, producer.publish(subject), subject)
}

// TestLoadOrGenerateKeepsTheUsersItFinds: a fleet restarted on its folder keeps its users' keys, and a cluster
// added since gets users of its own; LoadDir reads them all back.
func TestLoadOrGenerateKeepsTheUsersItFinds(t *testing.T) {
	dir := t.TempDir()
	first, err := natsauth.LoadOrGenerate(dir, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := natsauth.LoadOrGenerate(dir, []string{"a", "b.example"})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := natsauth.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		role    natsauth.Role
		cluster string
	}{{natsauth.Admin, ""}, {natsauth.Placer, ""}, {natsauth.Applier, "a"}, {natsauth.ClusterProducer, "a"}}
	for _, tt := range tests {
		want := first.Get(tt.role, tt.cluster).PublicKey
		if got := second.Get(tt.role, tt.cluster).PublicKey; got != want {
			t.Errorf("%s %q: key %s after a restart, want %s", tt.role, tt.cluster, got, want)
		}
		if got := loaded.Get(tt.role, tt.cluster).PublicKey; got != want {
			t.Errorf("%s %q: LoadDir key %s, want %s", tt.role, tt.cluster, got, want)
		}
	}
	for _, role := range []natsauth.Role{natsauth.Applier, natsauth.ClusterProducer} {
		if second.Get(role, "b.example") == nil || loaded.Get(role, "b.example") == nil {
			t.Errorf("no %s user for the added cluster", role)
		}
	}
	if len(loaded.All) != len(second.All) {
		t.Errorf("LoadDir read %d users, want %d", len(loaded.All), len(second.All))
	}
}
