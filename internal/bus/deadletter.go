package bus

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetflow/fleetflow/internal/observe"
	"github.com/fleetflow/fleetflow/schemas"
)

// DeadLetterPublisher stores dead letters; a jetstream.JetStream is one.
type DeadLetterPublisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)
}

// deadLetterTimeout bounds the publish of one dead letter: the loop waits for it before it terminates the
// message, and every message behind waits too.
const deadLetterTimeout = 5 * time.Second

// maxDeadError bounds the error header: a handler's error may quote a whole object, and headers count
// against the server's max payload.
const maxDeadError = 4096

// errPanicked marks the error handleSafely makes of a handler's panic, so the dead letter can say so.
var errPanicked = errors.New("handler panicked")

// deadReason is the dead-letter reason of a handler error the loop gives up on.
func deadReason(err error) string {
	switch {
	case errors.Is(err, errPanicked):
		return schemas.DeadPanic
	case IsPermanent(err):
		return schemas.DeadPermanent
	default:
		return schemas.DeadExhausted
	}
}

// storeDeadLetter publishes the dead letter of msg, which consumer gives up on for reason because of cause.
// A failure is logged and counted, not returned: the caller terminates msg either way, so that a dead-letter
// stream that is full, missing or forbidden never holds up the messages behind it.
func storeDeadLetter(ctx context.Context, js DeadLetterPublisher, log *slog.Logger, msg jetstream.Msg, consumer, reason, cause string) {
	dead, id := deadLetter(msg, consumer, reason, cause, time.Now())
	observe.DeadLetters.WithLabelValues(consumer, reason).Inc()
	if js == nil {
		observe.DeadLetterErrors.WithLabelValues(consumer).Inc()
		log.Warn("no dead-letter stream configured; the message is only logged", "dead_reason", reason)
		return
	}
	// Stopping (ctx done) must not lose the dead letter of a message terminated on the way out.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deadLetterTimeout)
	defer cancel()
	ack, err := js.PublishMsg(ctx, dead, jetstream.WithMsgID(id))
	if err != nil {
		observe.DeadLetterErrors.WithLabelValues(consumer).Inc()
		log.Error("dead letter not stored; terminating the message anyway", "dead_reason", reason,
			"dead_subject", dead.Subject, "error", err)
		return
	}
	log.Info("stored a dead letter", "dead_reason", reason, "dead_subject", dead.Subject, "dead_seq", ack.Sequence,
		"duplicate", ack.Duplicate)
}

// deadLetter is the dead letter of msg (see schemas/deadletters.go) and its Nats-Msg-Id.
func deadLetter(msg jetstream.Msg, consumer, reason, cause string, now time.Time) (*nats.Msg, string) {
	var stream string
	var seq, attempts uint64
	if meta, err := msg.Metadata(); err == nil {
		stream, seq, attempts = meta.Stream, meta.Sequence.Stream, meta.NumDelivered
		if consumer == "" {
			consumer = meta.Consumer
		}
	}
	dead := nats.NewMsg(schemas.DeadLetterSubject(consumer))
	for name, values := range msg.Headers() {
		if !isCloudEventsHeader(name) {
			name = schemas.HeaderDeadOriginalPrefix + name
		}
		dead.Header[name] = slices.Clone(values)
	}
	dead.Header.Set(schemas.HeaderDeadSubject, msg.Subject())
	dead.Header.Set(schemas.HeaderDeadStream, stream)
	dead.Header.Set(schemas.HeaderDeadSequence, strconv.FormatUint(seq, 10))
	dead.Header.Set(schemas.HeaderDeadConsumer, consumer)
	dead.Header.Set(schemas.HeaderDeadAttempts, strconv.FormatUint(attempts, 10))
	dead.Header.Set(schemas.HeaderDeadReason, reason)
	dead.Header.Set(schemas.HeaderDeadError, headerValue(cause, maxDeadError))
	dead.Header.Set(schemas.HeaderDeadTime, now.UTC().Format(time.RFC3339Nano))
	dead.Data = msg.Data()
	return dead, schemas.DeadLetterID(stream, seq, consumer)
}

// isCloudEventsHeader tells the headers a binary-mode CloudEvent is made of, which a dead letter keeps as
// they are, so any CloudEvents SDK still reads a dead letter whose envelope was sound.
func isCloudEventsHeader(name string) bool {
	return len(name) >= len(headerPrefix) && strings.EqualFold(name[:len(headerPrefix)], headerPrefix) ||
		strings.EqualFold(name, headerContentType)
}

// headerValue makes s fit a header: one line (a line break would end the header) of at most limit bytes.
func headerValue(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= limit {
		return s
	}
	s = s[:limit]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// DeadLetter is a message of the dead-letter stream, read back.
type DeadLetter struct {
	// Sequence is its position in schemas.StreamDead; Stored when that stream stored it.
	Sequence uint64
	Stored   time.Time
	// Time is when the consumer gave up (Stored when the header is missing).
	Time     time.Time
	Consumer string
	// Reason is one of schemas.DeadReasons; Error the error that made the consumer give up.
	Reason, Error string
	// Subject, Stream and StreamSequence say where the original message was stored.
	Subject        string
	Stream         string
	StreamSequence uint64
	// Attempts is how many times it was delivered.
	Attempts uint64
	// Header is the original message's headers, Data its data, both as they were.
	Header nats.Header
	Data   []byte
}

// ReadDeadLetter reads a message of the dead-letter stream. A header that is missing or does not parse leaves
// its field zero: a dead letter is read for what it holds, never refused.
func ReadDeadLetter(msg jetstream.Msg) DeadLetter {
	h := msg.Headers()
	d := DeadLetter{Consumer: h.Get(schemas.HeaderDeadConsumer), Reason: h.Get(schemas.HeaderDeadReason),
		Error: h.Get(schemas.HeaderDeadError), Subject: h.Get(schemas.HeaderDeadSubject),
		Stream: h.Get(schemas.HeaderDeadStream), Header: nats.Header{}, Data: msg.Data()}
	d.StreamSequence, _ = strconv.ParseUint(h.Get(schemas.HeaderDeadSequence), 10, 64)
	d.Attempts, _ = strconv.ParseUint(h.Get(schemas.HeaderDeadAttempts), 10, 64)
	if meta, err := msg.Metadata(); err == nil {
		d.Sequence, d.Stored = meta.Sequence.Stream, meta.Timestamp
	}
	d.Time = d.Stored
	if t, err := time.Parse(time.RFC3339Nano, h.Get(schemas.HeaderDeadTime)); err == nil {
		d.Time = t
	}
	for name, values := range h {
		switch original, prefixed := strings.CutPrefix(name, schemas.HeaderDeadOriginalPrefix); {
		case prefixed:
			d.Header[original] = slices.Clone(values)
		case isCloudEventsHeader(name):
			d.Header[name] = slices.Clone(values)
		}
	}
	return d
}
