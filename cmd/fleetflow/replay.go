package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/fleetflow/fleetflow/consumers/replay"
	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/placement/explain"
	"github.com/fleetflow/fleetflow/placement/lifecycle"
)

func init() {
	registerCommand(newReplayCommand)
	registerCommand(newExplainCommand)
}

// historyFlags choose where a replay reads the history: the streams, or an exported file.
type historyFlags struct {
	natsURL, from string
	auth          bus.ClientAuth
	until         string
}

func (f *historyFlags) register(flags *pflag.FlagSet) {
	flags.StringVar(&f.natsURL, "nats-url", "nats://127.0.0.1:4222", "NATS JetStream URL whose streams hold the history")
	flags.StringVar(&f.from, "from", "", "read the history from `FILE` (written by fleetflow audit export), not from NATS")
	flags.StringVar(&f.until, "until", "", "replay only the events stored until then: RFC 3339 time, or a duration ago (e.g. 10m)")
	registerNATSAuth(flags, &f.auth)
}

// opener returns a function that opens the history anew each time it is called (a what-if from the start reads
// it twice), and a function to call once done. Read from NATS, opts.Through is set to the placer's
// acknowledgement floor, so events the running placer has not answered yet are not replayed.
func (f *historyFlags) opener(cmd *cobra.Command, opts *replay.Options) (func() (replay.History, error), func(), error) {
	if f.from != "" {
		if cmd.Flags().Changed("nats-url") {
			return nil, nil, errors.New("--from and --nats-url: give one of them")
		}
		return func() (replay.History, error) {
			file, err := os.Open(f.from)
			if err != nil {
				return nil, fmt.Errorf("--from: %w", err)
			}
			return replay.ReadFile(file, f.from), nil
		}, func() {}, nil
	}
	nc, js, err := connectAs(f.natsURL, "fleetflow-replay", f.auth, nats.MaxReconnects(0))
	if err != nil {
		return nil, nil, err
	}
	if opts.Through, err = replay.PlacerFloor(cmd.Context(), js); err != nil {
		nc.Close()
		return nil, nil, err
	}
	return func() (replay.History, error) {
		return replay.ReadStreams(cmd.Context(), js, replay.ReadOptions{})
	}, nc.Close, nil
}

// parseWhen reads a flag's time: RFC 3339, or a duration before now.
func parseWhen(flag, value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, value); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d <= 0 {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time (2026-12-01T10:00:00Z) or a positive duration ago (1h)", flag, value)
	}
	return time.Now().Add(-d), nil
}

func newReplayCommand() *cobra.Command {
	var hf historyFlags
	var df decisionFlags
	var since string
	var output outputFormat
	var policyFiles, deletePolicies []string
	var fromStart, all bool
	cmd := &cobra.Command{
		Use:   "replay [--nats-url URL | --from FILE] [--since T] [--until T] [--policy FILE]... [--delete-policy NAME]... [-o table|json|yaml]",
		Short: "Replay the recorded history through the placement lifecycle in process: a determinism check, or a what-if of a policy change",
		Long: "replay reads the whole recorded history (the events and decisions streams, or a file written by\n" +
			"`fleetflow audit export`) into a fresh placer in this process and writes nothing to the streams or the\n" +
			"clusters. The placer decides with the settings the recorded placer's ticks carry (its flags below\n" +
			"override them).\n\n" +
			"Without --policy or --delete-policy it reports every recorded verdict and decision that the replay\n" +
			"does not reproduce (Missing, Extra, or Differs with the payload fields), for the events stored within\n" +
			"--since and --until, and exits 1 when there is any: a determinism check to run after an upgrade.\n\n" +
			"With --policy FILE (a changed or new SchedulePolicy; repeatable) or --delete-policy NAME it replays the\n" +
			"same history and then applies that policy set, as applying it now would, and prints per workload the\n" +
			"recorded outcome and the what-if one (moves, loses or gains a placement), a summary, and the requested\n" +
			"share of cpu, memory and GPUs per cluster before and after. With --from-start the policy set is in force\n" +
			"from the history's start instead: what would have happened had it been.\n\n" +
			"The history must be whole: from each stream's first sequence, with no gap, of this build's schema.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := replay.Options{Placer: lifecycle.Config{HeartbeatTimeout: df.heartbeatTimeout,
				PendingTimeout: df.pendingTimeout, ReservationTTL: df.reservationTTL, FailedApplyRetry: df.failedApplyRetry}}
			var err error
			if opts.Since, err = parseWhen("--since", since); err != nil {
				return err
			}
			if opts.Until, err = parseWhen("--until", hf.until); err != nil {
				return err
			}
			var w replay.WhatIf
			for _, file := range policyFiles {
				objects, err := readPolicyFile(file)
				if err != nil {
					return err
				}
				w.Policies = append(w.Policies, objects...)
			}
			w.Delete, w.FromStart = deletePolicies, fromStart
			open, done, err := hf.opener(cmd, &opts)
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			if len(w.Policies) > 0 || len(w.Delete) > 0 {
				report, err := replay.RunWhatIf(cmd.Context(), open, w, opts)
				if err != nil {
					return err
				}
				if output.structured() {
					return output.encode(out, report)
				}
				return report.WriteTable(out, all)
			}
			if fromStart {
				return errors.New("--from-start: give --policy or --delete-policy, the policy set to put in force from the start")
			}
			h, err := open()
			if err != nil {
				return err
			}
			defer func() { _ = h.Close() }()
			res, err := replay.NewSession(opts).Run(cmd.Context(), h)
			if err != nil {
				return err
			}
			if output.structured() {
				err = output.encode(out, res)
			} else {
				err = res.WriteTable(out)
			}
			if err == nil && len(res.Divergences) > 0 {
				cmd.SilenceUsage = true
				return fmt.Errorf("replay: %d recorded verdicts and decisions not reproduced", len(res.Divergences))
			}
			return err
		},
	}
	hf.register(cmd.Flags())
	df.register(cmd.Flags())
	cmd.Flags().StringVar(&since, "since", "", "report only what answers events stored since then: RFC 3339 time, or a duration ago (e.g. 1h)")
	cmd.Flags().StringArrayVar(&policyFiles, "policy", nil, "a SchedulePolicy file (YAML or JSON, several documents allowed) to replay the history under; repeatable")
	cmd.Flags().StringArrayVar(&deletePolicies, "delete-policy", nil, "a SchedulePolicy to drop in the what-if; repeatable")
	cmd.Flags().BoolVar(&fromStart, "from-start", false, "put the what-if policy set in force from the history's start, not after it")
	cmd.Flags().BoolVar(&all, "all", false, "with a what-if, list every workload, not only those that change")
	registerOutput(cmd.Flags(), &output)
	return cmd
}

// decisionFlags override the placer settings a replay takes from the recorded ticks.
type decisionFlags struct {
	heartbeatTimeout, pendingTimeout, reservationTTL, failedApplyRetry time.Duration
}

func (f *decisionFlags) register(flags *pflag.FlagSet) {
	const recorded = "; default: as the recorded placer's ticks say, else the placer's default"
	flags.DurationVar(&f.heartbeatTimeout, "heartbeat-timeout", 0, "decide as if a cluster silent this long were NotReady"+recorded)
	flags.DurationVar(&f.pendingTimeout, "pending-timeout", 0, "decide as if pods pending this long moved their workload"+recorded)
	flags.DurationVar(&f.reservationTTL, "reservation-ttl", 0, "decide as if reservations held this long"+recorded)
	flags.DurationVar(&f.failedApplyRetry, "failed-apply-retry", 0, "decide as if a refused Apply were sent again after this long"+recorded)
}

// readPolicyFile reads every document of a YAML or JSON file as an object.
func readPolicyFile(file string) ([]map[string]any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []map[string]any
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("--policy %s: document %d: %w", file, doc, err)
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--policy %s: no SchedulePolicy in the file", file)
	}
	return out, nil
}

func newExplainCommand() *cobra.Command {
	var hf historyFlags
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "explain KIND/NAMESPACE/NAME [--nats-url URL | --from FILE] [--until T] [-o table|json|yaml]",
		Short: "Why a workload is placed where it is: its analysis, the policies, and every check per cluster",
		Long: "explain replays the recorded history (as `fleetflow replay` does, writing nothing) up to --until or its end,\n" +
			"then explains one workload on the fleet view as it stood: what its ResourceInterface read (pods and\n" +
			"requests per component, gangs), the policy that governs it and why the others do not, and per cluster\n" +
			"each check in the order the scheduler applies them (selector, Ready, taints, APIs, capacity bound,\n" +
			"node-level fit naming the largest free node when no node holds a pod, score), then the decision and\n" +
			"the recorded decisions and applier reports of the workload.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := replay.Options{}
			var err error
			if opts.Until, err = parseWhen("--until", hf.until); err != nil {
				return err
			}
			open, done, err := hf.opener(cmd, &opts)
			if err != nil {
				return err
			}
			defer done()
			h, err := open()
			if err != nil {
				return err
			}
			defer func() { _ = h.Close() }()
			s := replay.NewSession(opts)
			s.Follow = args[0]
			if _, err := s.Run(cmd.Context(), h); err != nil {
				return err
			}
			snap := s.Snapshot()
			id, err := explain.ResolveID(snap, args[0])
			if err != nil {
				return err
			}
			e, err := explain.Explain(snap, id)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output.structured() {
				return output.encode(out, struct {
					*explain.Explanation
					History []replay.Step `json:"history"`
				}{e, s.Steps()})
			}
			if err := e.WriteTable(out); err != nil {
				return err
			}
			if steps := s.Steps(); len(steps) > 0 {
				fmt.Fprintln(out, "\nHistory:")
				for _, st := range steps {
					fmt.Fprintf(out, "  %s  %s #%d  %s\n", st.Stored.UTC().Format("2006-01-02T15:04:05.000Z"), st.Stream, st.Sequence, st.What)
				}
			}
			return nil
		},
	}
	hf.register(cmd.Flags())
	registerOutput(cmd.Flags(), &output)
	return cmd
}
