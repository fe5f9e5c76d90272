package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/consumers/audit"
	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/bus"
)

func init() { registerCommand(newAuditCommand) }

func newAuditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Read fleetflow's event history as any third party can: a NATS client and a CloudEvents SDK",
	}
	cmd.AddCommand(newAuditTailCommand(), newAuditExportCommand(), newAuditDeadCommand())
	return cmd
}

func newAuditExportCommand() *cobra.Command {
	var natsURL, since string
	var auth bus.ClientAuth
	cmd := &cobra.Command{
		Use:   "export [--nats-url URL] [--since T] > history.jsonl",
		Short: "Write the recorded history as CloudEvents in structured JSON, one per line, for replay without NATS",
		Long: "export writes every message of the events and decisions streams, merged by the time they were stored, as\n" +
			"a CloudEvent in structured JSON mode, one per line, on standard output. Each carries where it was stored\n" +
			"as the extension attributes jsstream, jssequence, jssubject and jsstored, so any CloudEvents SDK reads the\n" +
			"file and `fleetflow replay --from FILE` and `fleetflow explain --from FILE` replay it with no NATS at all.\n" +
			"A message that was no fleetflow event keeps its place as an event of type " + replay.TypeUndecodable + ".\n" +
			"Only a whole history (no --since, and streams whose first messages have not aged out) can be replayed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			from, err := parseWhen("--since", since)
			if err != nil {
				return err
			}
			nc, js, err := connectAs(natsURL, "fleetflow-export", auth)
			if err != nil {
				return err
			}
			defer nc.Close()
			h, err := replay.ReadStreams(ctx, js, replay.ReadOptions{Since: from, Partial: true})
			if err != nil {
				return err
			}
			defer func() { _ = h.Close() }()
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<20)
			n := 0
			for {
				r, err := h.Next(ctx)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				line, err := replay.MarshalRecord(r)
				if err != nil {
					return err
				}
				if _, err := out.Write(append(line, '\n')); err != nil {
					return err
				}
				n++
			}
			if err := out.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "audit export: %d events written\n", n)
			return nil
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS JetStream URL")
	registerNATSAuth(cmd.Flags(), &auth)
	cmd.Flags().StringVar(&since, "since", "", "only what was stored since then: RFC 3339 time, or a duration ago (e.g. 1h); default: all history")
	return cmd
}

func newAuditTailCommand() *cobra.Command {
	var natsURL, workload, since, output string
	var auth bus.ClientAuth
	var follow bool
	cmd := &cobra.Command{
		Use:   "tail [--workload KIND[.GROUP]/[NAMESPACE/]NAME] [--since 1h] [--follow] [-o table|json|yaml]",
		Short: "Print every event about a workload, in order, from history: submitted, analyzed, decided, applied, status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			q := audit.AuditQuery{Follow: follow}
			if workload != "" {
				sel, err := audit.ParseWorkloadSelector(workload)
				if err != nil {
					return fmt.Errorf("--workload: %w", err)
				}
				q.Workload = sel
			}
			if since != "" {
				d, err := parseDuration("--since", since)
				if err != nil {
					return err
				}
				q.Since = time.Now().Add(-d)
			}
			switch output {
			case "text":
				output = string(outputTable) // its name before -o was the same everywhere
			case string(outputTable), string(outputJSON), string(outputYAML):
			default:
				return usageError(fmt.Errorf("-o %q: want table, json or yaml", output))
			}
			// A tail that follows says when the server goes away and comes back instead of falling silent.
			log := slog.Default().With("component", "audit")
			nc, js, err := connectAs(natsURL, "fleetflow-audit", auth, bus.LogConnectionEvents(log)...)
			if err != nil {
				return err
			}
			defer nc.Close()
			out := cmd.OutOrStdout()
			printed := 0
			err = audit.AuditTail(ctx, js, q, func(r audit.AuditRecord) error {
				printed++
				if output != string(outputTable) {
					return writeAuditRecord(out, outputFormat(output), r)
				}
				at := r.Event.Time()
				if at.IsZero() {
					at = r.Stored
				}
				eventType := r.Event.Type()
				if r.Err != nil {
					eventType = "?"
				}
				// One line per record, whatever an error message or a reason holds.
				summary := strings.Join(strings.Fields(r.Summary()), " ")
				_, err := fmt.Fprintf(out, "%s  %-34s %s\n", at.UTC().Format("2006-01-02T15:04:05.000Z"), shortType(eventType), summary)
				return err
			})
			if err == nil && printed == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), noEventsNote(q.Workload, workload, since))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS JetStream URL")
	registerNATSAuth(cmd.Flags(), &auth)
	cmd.Flags().StringVar(&workload, "workload", "", "only events about this workload: KIND[.GROUP]/NAMESPACE/NAME, or KIND[.GROUP]/NAME when cluster-scoped")
	cmd.Flags().StringVar(&since, "since", "", "start this long ago (e.g. 1h); default: all history")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	cmd.Flags().StringVarP(&output, "output", "o", string(outputTable),
		"table (one line per event), json (one record per line, as it comes) or yaml (one document per record)")
	return cmd
}

// noEventsNote says on stderr why a tail printed nothing, so an empty answer is not mistaken for a hang or a
// wrong server.
func noEventsNote(sel *audit.WorkloadSelector, workload, since string) string {
	if sel == nil {
		return fmt.Sprintf("audit: no events in the streams%s", sinceNote(since))
	}
	note := fmt.Sprintf("audit: no events about %s in the streams%s; the kind is case-sensitive (PyTorchJob, not "+
		"pytorchjob) and a group, when given, must be the kind's API group", workload, sinceNote(since))
	if sel.Namespace == "" {
		note += "; KIND/NAME names a cluster-scoped workload, a namespaced one is KIND/NAMESPACE/NAME"
	}
	return note
}

func sinceNote(since string) string {
	if since == "" {
		return ""
	}
	return " in the last " + since
}

func shortType(t string) string {
	const prefix = "io.fleetflow."
	if len(t) > len(prefix) && t[:len(prefix)] == prefix {
		return t[len(prefix):]
	}
	return t
}

func errString(err error) any {
	if err == nil {
		return nil
	}
	return err.Error()
}

// writeAuditRecord writes one record of a tail as it comes, so a follow streams: a JSON object on a line of its
// own, or a YAML document.
func writeAuditRecord(out io.Writer, format outputFormat, r audit.AuditRecord) error {
	line, err := json.Marshal(map[string]any{"stream": r.Stream, "sequence": r.Sequence, "subject": r.Subject,
		"stored": r.Stored, "event": r.Event, "error": errString(r.Err)})
	if err != nil {
		return err
	}
	if format == outputJSON {
		_, err = fmt.Fprintln(out, string(line))
		return err
	}
	doc, err := sigsyaml.JSONToYAML(line)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "---\n%s", doc)
	return err
}
