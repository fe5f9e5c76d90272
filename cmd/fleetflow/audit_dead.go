package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/schemas"
)

func newAuditDeadCommand() *cobra.Command {
	var natsURL, consumer, since string
	var output outputFormat
	var auth bus.ClientAuth
	cmd := &cobra.Command{
		Use:   "dead [--nats-url URL] [--consumer NAME] [--since DURATION|TIME] [-o table|json|yaml]",
		Short: "List the messages the consumers gave up on, kept in the dead-letter stream",
		Long: "dead lists the dead letters of " + schemas.StreamDead + ", oldest first: messages a durable consumer could\n" +
			"not decode (undecodable) or validate (invalid), or whose handler returned a permanent error, failed on every\n" +
			"attempt (exhausted) or panicked. Each is the original message, data and headers unchanged, with where it\n" +
			"was stored and why it died. It only reads.\n\n" +
			"-o json (or yaml) is a list of objects: time, consumer, reason, error, subject, stream, sequence, attempts,\n" +
			"payloadBytes, deadSequence (the dead letter's own sequence, for `nats stream get " + schemas.StreamDead + "`)\n" +
			"headers (the original message's) and, when the message was a CloudEvent, eventType and eventId.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			from, err := parseWhen("--since", since)
			if err != nil {
				return err
			}
			nc, js, err := connectAs(natsURL, "fleetflow-audit-dead", auth)
			if err != nil {
				return err
			}
			defer nc.Close()
			letters, err := audit.DeadLetters(ctx, js, audit.DeadQuery{Consumer: consumer, Since: from})
			if err != nil {
				return err
			}
			if output.structured() {
				return writeDeadLetters(cmd.OutOrStdout(), output, letters)
			}
			if len(letters) == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), noDeadLettersNote(consumer, since))
				return nil
			}
			return writeDeadLettersTable(cmd.OutOrStdout(), letters)
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS JetStream URL")
	registerNATSAuth(cmd.Flags(), &auth)
	cmd.Flags().StringVar(&consumer, "consumer", "", "only this durable consumer's dead letters (placer, status, status-decisions, applier-CLUSTER)")
	cmd.Flags().StringVar(&since, "since", "", "only what died since then: RFC 3339 time, or a duration ago (e.g. 1h); default: all the stream keeps")
	registerOutput(cmd.Flags(), &output)
	return cmd
}

// deadLetterJSON is one dead letter of -o json and -o yaml.
type deadLetterJSON struct {
	Time         time.Time `json:"time"`
	Consumer     string    `json:"consumer"`
	Reason       string    `json:"reason"`
	Error        string    `json:"error"`
	Subject      string    `json:"subject"`
	Stream       string    `json:"stream"`
	Sequence     uint64    `json:"sequence"`
	Attempts     uint64    `json:"attempts"`
	PayloadBytes int       `json:"payloadBytes"`
	DeadSequence uint64    `json:"deadSequence"`
	EventType    string    `json:"eventType,omitempty"`
	EventID      string    `json:"eventId,omitempty"`
	// Headers are the original message's, as they were.
	Headers nats.Header `json:"headers,omitempty"`
}

// writeDeadLetters writes letters as one JSON or YAML list, empty when there are none.
func writeDeadLetters(w io.Writer, format outputFormat, letters []bus.DeadLetter) error {
	out := make([]deadLetterJSON, 0, len(letters))
	for _, d := range letters {
		out = append(out, deadLetterJSON{Time: d.Time.UTC(), Consumer: d.Consumer, Reason: d.Reason, Error: d.Error,
			Subject: d.Subject, Stream: d.Stream, Sequence: d.StreamSequence, Attempts: d.Attempts,
			PayloadBytes: len(d.Data), DeadSequence: d.Sequence, EventType: d.Header.Get("ce-type"), EventID: d.Header.Get("ce-id"),
			Headers: d.Header})
	}
	return format.encode(w, out)
}

// maxTableError bounds the error column, so a row stays on a terminal's line or two; -o json has it whole.
const maxTableError = 100

// writeDeadLettersTable writes letters as a table, one row each.
func writeDeadLettersTable(w io.Writer, letters []bus.DeadLetter) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCONSUMER\tREASON\tATTEMPTS\tSTREAM/SEQ\tSUBJECT\tBYTES\tERROR")
	for _, d := range letters {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s/%d\t%s\t%d\t%s\n", d.Time.UTC().Format("2006-01-02T15:04:05.000Z"), d.Consumer,
			d.Reason, d.Attempts, d.Stream, d.StreamSequence, d.Subject, len(d.Data), shorten(d.Error, maxTableError))
	}
	return tw.Flush()
}

// shorten cuts s to at most limit runes, marking the cut.
func shorten(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	return string([]rune(s)[:limit-1]) + "…"
}

// noDeadLettersNote says on stderr that the table is empty, and for what, so it is not taken for a hang.
func noDeadLettersNote(consumer, since string) string {
	var of, when string
	if consumer != "" {
		of = " of consumer " + consumer
	}
	if _, err := time.ParseDuration(since); err == nil {
		when = " in the last " + since
	} else if since != "" {
		when = " since " + since
	}
	return "audit: no dead letters" + of + " in " + schemas.StreamDead + when
}
