package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/fleetflow/fleetflow/schemas/streams"
)

// Pings tell a connection that its server is out of reach: across a network partition its TCP connection is not
// reset but stalls, and only unanswered pings make the client fail over to another server of the cluster. With
// nats.go's defaults (every 2m, 2 outstanding) a part connected to a cut-off server would sit idle for minutes.
const (
	pingInterval        = 5 * time.Second
	maxPingsOutstanding = 3
)

// Connect opens a NATS connection and a JetStream context. name shows up in the server's connection list.
func Connect(url, name string, options ...nats.Option) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1),
		nats.PingInterval(pingInterval), nats.MaxPingsOutstanding(maxPingsOutstanding)}, options...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream on %s: %w", url, err)
	}
	return nc, js, nil
}

// LogConnectionEvents makes a connection log what NATS reports asynchronously: a subscription that fell behind
// and dropped messages (a slow consumer), a permission violation, a disconnect and a reconnect. Without it
// nats.go reports them to nobody, and a message dropped on its way to a consumer shows only as a redelivery
// after the consumer's ack wait.
func LogConnectionEvents(log *slog.Logger) []nats.Option {
	return []nats.Option{
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			attrs := []any{"connection", nc.Opts.Name, "error", err}
			if sub != nil {
				attrs = append(attrs, "subject", sub.Subject)
				if dropped, dropErr := sub.Dropped(); dropErr == nil {
					attrs = append(attrs, "dropped", dropped)
				}
			}
			log.Warn("nats reported an error", attrs...)
		}),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil { // nil: the connection was closed on purpose
				log.Warn("nats disconnected", "connection", nc.Opts.Name, "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "connection", nc.Opts.Name, "url", nc.ConnectedUrlRedacted())
		}),
	}
}

// ProvisionStreams creates or updates every stream that schemas defines. It is idempotent: a stream whose
// configuration already matches is left untouched.
func ProvisionStreams(ctx context.Context, js jetstream.JetStream, opts streams.Options, log *slog.Logger) error {
	for _, want := range streams.Configs(opts) {
		existing, err := js.Stream(ctx, want.Name)
		if err == nil && configMatches(existing.CachedInfo().Config, want) {
			continue
		}
		if _, err := js.CreateOrUpdateStream(ctx, want); err != nil {
			return fmt.Errorf("provision stream %s: %w", want.Name, err)
		}
		log.Info("provisioned stream", "stream", want.Name, "subjects", want.Subjects)
	}
	return nil
}

// configMatches compares the fields fleetflow sets; the server fills in the rest with its defaults.
func configMatches(have, want jetstream.StreamConfig) bool {
	return have.Description == want.Description &&
		reflect.DeepEqual(have.Subjects, want.Subjects) &&
		have.Retention == want.Retention &&
		have.MaxAge == want.MaxAge &&
		have.Duplicates == want.Duplicates &&
		have.Storage == want.Storage &&
		have.Replicas == want.Replicas &&
		limit(have.MaxMsgsPerSubject) == limit(want.MaxMsgsPerSubject) &&
		limit(have.MaxMsgs) == limit(want.MaxMsgs) &&
		limit(have.MaxBytes) == limit(want.MaxBytes) &&
		have.Discard == want.Discard &&
		have.AllowAtomicPublish == want.AllowAtomicPublish &&
		have.AllowDirect == want.AllowDirect &&
		sourcesMatch(have.Sources, want.Sources)
}

func sourcesMatch(have, want []*jetstream.StreamSource) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range want {
		if have[i].Name != want[i].Name || have[i].FilterSubject != want[i].FilterSubject || have[i].OptStartSeq != want[i].OptStartSeq {
			return false
		}
	}
	return true
}

// limit maps JetStream's two spellings of "unlimited" (0 in a request, -1 from the server) to one.
func limit(v int64) int64 { return max(v, 0) }

// EnsureConsumer creates or updates a durable consumer. Several processes may call it for the same
// durable; they then share its deliveries, which is how consumers scale out.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) (jetstream.Consumer, error) {
	consumer, err := js.CreateOrUpdateConsumer(ctx, stream, cfg)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on stream %s: %w", cfg.Durable, stream, err)
	}
	return consumer, nil
}

// ClientAuth is how a client proves itself to an external NATS server and checks the server's certificate.
// Credentials in the URL (nats://user:password@host) work too; these cover what production servers ask for.
type ClientAuth struct {
	// CredsFile is a NATS credentials file (a user JWT and its NKey seed).
	CredsFile string
	// NkeyFile is an NKey user's seed file, for servers that list their users by public key (the users
	// `fleetflow nats users` makes). The connection's reply subjects then start with InboxPrefix of that key,
	// the only inbox its user may subscribe to.
	NkeyFile string
	// TLSCAFile is a PEM bundle of the CAs that sign the server's certificate, when the system's roots do not.
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are a client certificate, for servers that verify clients by TLS.
	TLSCertFile, TLSKeyFile string
}

// Options turns the settings into connection options. It reads the files now, so a missing or unreadable
// file is reported at start, naming it, instead of as a failed connection.
func (a ClientAuth) Options() ([]nats.Option, error) {
	var opts []nats.Option
	for _, f := range []struct{ flag, path string }{{"creds", a.CredsFile}, {"nkey", a.NkeyFile}, {"CA", a.TLSCAFile},
		{"client certificate", a.TLSCertFile}, {"client key", a.TLSKeyFile}} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("nats %s file: %w", f.flag, err)
		}
	}
	if a.CredsFile != "" && a.NkeyFile != "" {
		return nil, errors.New("nats credentials: give a creds file or an nkey seed file, not both")
	}
	if a.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	}
	if a.NkeyFile != "" {
		nkeyOpts, err := NkeyOptions(a.NkeyFile)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nkeyOpts...)
	}
	if a.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(a.TLSCAFile))
	}
	if (a.TLSCertFile == "") != (a.TLSKeyFile == "") {
		return nil, errors.New("nats client certificate: give both the certificate and its key")
	}
	if a.TLSCertFile != "" {
		opts = append(opts, nats.ClientCert(a.TLSCertFile, a.TLSKeyFile))
	}
	return opts, nil
}

// IsZero reports whether no setting is given.
func (a ClientAuth) IsZero() bool { return a == ClientAuth{} }

// NkeyOptions authenticate as the NKey user whose seed is in seedFile, with replies on that user's own inbox.
func NkeyOptions(seedFile string) ([]nats.Option, error) {
	seed, err := os.ReadFile(seedFile)
	if err != nil {
		return nil, fmt.Errorf("nats nkey file: %w", err)
	}
	opts, err := NkeySeedOptions(seed)
	if err != nil {
		return nil, fmt.Errorf("nats nkey file %s: %w", seedFile, err)
	}
	return opts, nil
}

// NkeySeedOptions authenticate as the NKey user of seed, with replies on that user's own inbox.
func NkeySeedOptions(seed []byte) ([]nats.Option, error) {
	kp, err := nkeys.FromSeed(bytes.TrimSpace(seed))
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	public, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("nkey seed: %w", err)
	}
	sign := func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) }
	return []nats.Option{nats.Nkey(public, sign), nats.CustomInboxPrefix(InboxPrefix(public))}, nil
}

// InboxPrefix is where the replies to the NKey user public go (its requests' answers, its consumers'
// deliveries): a prefix of its own, so that a user allowed to subscribe only there cannot read the answers
// another user's requests get on the shared _INBOX.
func InboxPrefix(public string) string { return "_INBOX_" + public }
