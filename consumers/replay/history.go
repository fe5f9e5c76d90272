package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2/event"

	"github.com/fleetflow/fleetflow/schemas"
)

// Record is one message of the history: a CloudEvent and where its stream stored it.
type Record struct {
	Stream   string
	Subject  string
	Sequence uint64
	// Stored is when the stream stored the message, by the server's clock.
	Stored time.Time
	Event  cloudevents.Event
}

// where names the record for an error.
func (r Record) where() string {
	return fmt.Sprintf("%s sequence %d (%s)", r.Stream, r.Sequence, r.Subject)
}

// History yields the records of the events and decisions streams: each stream in sequence order, the two
// merged by stored time. Next returns io.EOF after the last one.
type History interface {
	Next(ctx context.Context) (Record, error)
	Close() error
}

// Extension attributes that carry, in an exported file, where each event was stored.
const (
	ExtensionStream   = "jsstream"
	ExtensionSequence = "jssequence"
	ExtensionSubject  = "jssubject"
	ExtensionStored   = "jsstored"
)

// MarshalRecord writes r as one line of structured-mode CloudEvents JSON, its stream position as extensions.
func MarshalRecord(r Record) ([]byte, error) {
	e := r.Event.Clone()
	e.SetExtension(ExtensionStream, r.Stream)
	e.SetExtension(ExtensionSequence, strconv.FormatUint(r.Sequence, 10))
	e.SetExtension(ExtensionSubject, r.Subject)
	e.SetExtension(ExtensionStored, r.Stored.UTC().Format(time.RFC3339Nano))
	line, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", r.where(), err)
	}
	return line, nil
}

// UnmarshalRecord reads one line written by MarshalRecord.
func UnmarshalRecord(line []byte) (Record, error) {
	e := cloudevents.New()
	if err := json.Unmarshal(line, &e); err != nil {
		return Record{}, fmt.Errorf("not a CloudEvent in structured JSON: %w", err)
	}
	ext := e.Extensions()
	str := func(name string) (string, error) {
		v, ok := ext[name]
		if !ok {
			return "", fmt.Errorf("event %s: extension %q: required (where the stream stored the event)", e.ID(), name)
		}
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("event %s: extension %q: want a string, have %T", e.ID(), name, v)
		}
		return s, nil
	}
	var r Record
	var err error
	if r.Stream, err = str(ExtensionStream); err != nil {
		return Record{}, err
	}
	if r.Subject, err = str(ExtensionSubject); err != nil {
		return Record{}, err
	}
	seq, err := str(ExtensionSequence)
	if err != nil {
		return Record{}, err
	}
	if r.Sequence, err = strconv.ParseUint(seq, 10, 64); err != nil || r.Sequence == 0 {
		return Record{}, fmt.Errorf("event %s: extension %q: %q is not a positive sequence", e.ID(), ExtensionSequence, seq)
	}
	stored, err := str(ExtensionStored)
	if err != nil {
		return Record{}, err
	}
	if r.Stored, err = time.Parse(time.RFC3339Nano, stored); err != nil {
		return Record{}, fmt.Errorf("event %s: extension %q: %w", e.ID(), ExtensionStored, err)
	}
	for _, name := range []string{ExtensionStream, ExtensionSequence, ExtensionSubject, ExtensionStored} {
		if err := e.Context.SetExtension(name, nil); err != nil {
			return Record{}, fmt.Errorf("event %s: %w", e.ID(), err)
		}
	}
	r.Event = e
	return r, nil
}

// TypeUndecodable is the type of a record standing for a message that is no fleetflow CloudEvent: its data
// holds the decoding error and the message's body. It is outside fleetflow's own type space, so a replay
// passes over it as the placer did.
const TypeUndecodable = "dev.fleetflow.export.undecodable"

// undecodable is the event that stands for message data at r that did not decode.
func undecodable(r Record, data []byte, err error) cloudevents.Event {
	e := cloudevents.New()
	e.SetID(fmt.Sprintf("undecodable/%s/%d", r.Stream, r.Sequence))
	e.SetType(TypeUndecodable)
	e.SetSource("/fleetflow/export")
	e.SetSubject(r.Subject)
	e.SetTime(r.Stored)
	_ = e.SetData(schemas.ContentTypeJSON, map[string]string{"error": err.Error(), "data": string(data)})
	return e
}

// fileHistory reads an exported file.
type fileHistory struct {
	scanner *bufio.Scanner
	closer  io.Closer
	line    int
	name    string
}

// maxLine bounds one exported event: a workload object, a verdict with its analysis and reasons.
const maxLine = 64 << 20

// ReadFile returns the history exported to r (by `fleetflow audit export`); name names it in errors.
func ReadFile(r io.Reader, name string) History {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 1<<20), maxLine)
	closer, _ := r.(io.Closer)
	return &fileHistory{scanner: s, closer: closer, name: name}
}

func (f *fileHistory) Next(ctx context.Context) (Record, error) {
	for f.scanner.Scan() {
		f.line++
		if err := ctx.Err(); err != nil {
			return Record{}, err
		}
		line := f.scanner.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		r, err := UnmarshalRecord(line)
		if err != nil {
			return Record{}, fmt.Errorf("%s line %d: %w", f.name, f.line, err)
		}
		return r, nil
	}
	if err := f.scanner.Err(); err != nil {
		return Record{}, fmt.Errorf("%s line %d: %w", f.name, f.line+1, err)
	}
	return Record{}, io.EOF
}

func (f *fileHistory) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// checked wraps a history with the checks every replay needs: each stream starts at its first sequence
// and has no gap, and every fleetflow event is of a type this build reads.
type checked struct {
	History
	last map[string]uint64
}

// Checked returns h checking that each stream's records run from sequence 1 with no gap, and that every
// event of fleetflow's own type space is one this build knows (the same schema version).
func Checked(h History) History { return &checked{History: h, last: map[string]uint64{}} }

// ErrGap is wrapped by the error of a history that lacks messages.
var ErrGap = errors.New("the history has a gap: replay needs every message from each stream's first sequence")

// ErrSchema is wrapped by the error of a history written by a build of another schema version.
var ErrSchema = errors.New("event type unknown to this build (another schema version)")

func (c *checked) Next(ctx context.Context) (Record, error) {
	r, err := c.History.Next(ctx)
	if err != nil {
		return r, err
	}
	if r.Stream != schemas.StreamEvents && r.Stream != schemas.StreamDecisions {
		return Record{}, fmt.Errorf("%s: stream %q is none of %s, %s", r.where(), r.Stream, schemas.StreamEvents, schemas.StreamDecisions)
	}
	if want := c.last[r.Stream] + 1; r.Sequence != want {
		return Record{}, fmt.Errorf("%s: expected sequence %d of %s next: %w", r.where(), want, r.Stream, ErrGap)
	}
	c.last[r.Stream] = r.Sequence
	if t := r.Event.Type(); strings.HasPrefix(t, schemas.TypePrefix) && !schemas.KnownType(t) {
		return Record{}, fmt.Errorf("%s: type %q: %w", r.where(), t, ErrSchema)
	}
	return r, nil
}
