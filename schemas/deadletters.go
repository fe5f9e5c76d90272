package schemas

import (
	"strconv"
	"strings"
)

// Dead letters. A message a durable consumer cannot decode, that fails Validate, whose handler fails
// MaxDeliver times, returns a permanent error or panics is stored in StreamDead on DeadLetterSubject(consumer)
// before the consumer terminates it: its data unchanged, its CloudEvents headers (ce-*, Content-Type) as they
// were, its other headers under HeaderDeadOriginalPrefix, and the headers below saying where it came from and
// why it died. Its Nats-Msg-Id is DeadLetterID, so a message terminated twice is stored once.
const (
	// SubjectDeadRoot is the first token of every dead letter's subject.
	SubjectDeadRoot = "dead"
	// SubjectAllDead selects every dead letter.
	SubjectAllDead = SubjectDeadRoot + ".>"

	// HeaderDeadSubject is the subject the message was stored on.
	HeaderDeadSubject = "Fleetflow-Dead-Subject"
	// HeaderDeadStream and HeaderDeadSequence are the stream that held it and its sequence there.
	HeaderDeadStream   = "Fleetflow-Dead-Stream"
	HeaderDeadSequence = "Fleetflow-Dead-Sequence"
	// HeaderDeadConsumer is the durable consumer that gave up on it.
	HeaderDeadConsumer = "Fleetflow-Dead-Consumer"
	// HeaderDeadAttempts is how many times it was delivered to that consumer.
	HeaderDeadAttempts = "Fleetflow-Dead-Attempts"
	// HeaderDeadReason is one of DeadReasons.
	HeaderDeadReason = "Fleetflow-Dead-Reason"
	// HeaderDeadError is the decoding, validation or handler error, on one line.
	HeaderDeadError = "Fleetflow-Dead-Error"
	// HeaderDeadTime is when the consumer gave up, RFC 3339 with nanoseconds, UTC.
	HeaderDeadTime = "Fleetflow-Dead-Time"
	// HeaderDeadOriginalPrefix prefixes each original header other than the CloudEvents ones: kept as they
	// were, headers such as Nats-Msg-Id or Nats-Expected-Stream would steer the dead letter's own publish.
	HeaderDeadOriginalPrefix = "Fleetflow-Original-"
)

// Why a message became a dead letter: the values of HeaderDeadReason and of the reason label of
// fleetflow_dead_letters_total.
const (
	// DeadUndecodable: not a CloudEvent, an unknown type, or data that does not decode into its type's payload.
	DeadUndecodable = "undecodable"
	// DeadInvalid: the payload decoded but its Validate refused it.
	DeadInvalid = "invalid"
	// DeadPermanent: the handler returned an error marked as not worth retrying.
	DeadPermanent = "permanent"
	// DeadExhausted: the handler failed on each of MaxDeliver attempts.
	DeadExhausted = "exhausted"
	// DeadPanic: the handler panicked.
	DeadPanic = "panic"
	// DeadRefused: the consumer refused the message unread, over a bound of its sender (a cluster's node
	// reports over its budget); one dead letter stands for the refusals of a while, and names how many.
	DeadRefused = "refused"
)

// DeadReasons are every value of HeaderDeadReason.
var DeadReasons = []string{DeadUndecodable, DeadInvalid, DeadPermanent, DeadExhausted, DeadPanic, DeadRefused}

// DeadLetterSubject is where the dead letters of consumer are stored: one token after SubjectDeadRoot, so
// a consumer's name with dots, wildcards or spaces in it still names one subject.
func DeadLetterSubject(consumer string) string {
	token := strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return '_'
		}
		return r
	}, consumer)
	if token == "" {
		token = "_"
	}
	return SubjectDeadRoot + "." + token
}

// DeadLetterID is the Nats-Msg-Id of the dead letter of the message at sequence of stream that consumer gave
// up on: a terminate that is redelivered and dead-lettered again within the duplicate window is stored once.
func DeadLetterID(stream string, sequence uint64, consumer string) string {
	return "dead/" + stream + "/" + strconv.FormatUint(sequence, 10) + "/" + consumer
}
