package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/internal/simulate"
	"github.com/fleetflow/fleetflow/placement/structs"
)

func init() { registerCommand(newSimulateCommand) }

func newSimulateCommand() *cobra.Command {
	var output outputFormat
	var failOnUnschedulable bool
	var skip []string
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "simulate FLEET.yaml [-o table|json|yaml]",
		Short: "Dry-run placement: place a fleet file's workloads in order on its simulated clusters",
		Long: "simulate loads a fleet file: namespaces and clusters with their nodes as in deploy/fleets/demo.yaml,\n" +
			"plus policies (SchedulePolicy objects), resourceInterfaces (RIs used instead of the built-ins for their\n" +
			"kinds) and workloads, each \"file: CR.yaml\" (relative to the fleet file) or \"object: {...}\", with\n" +
			"\"namespace: NS\" to put a CR that names no namespace there, as kubectl apply -n does (else default).\n" +
			"A kind no RI describes (a CRD, a ConfigMap) asks nothing of capacity and goes where its policy says, as in\n" +
			"the placer: a Duplicate policy copies it onto every Ready cluster it selects. CustomResourceDefinitions\n" +
			"and the other built-in cluster-scoped kinds stay without a namespace. It places the workloads one after\n" +
			"another through the placement core, each decision's reservations counting against the next, and\n" +
			"prints each decision with why it passed clusters over: each reason once, with the clusters it passed\n" +
			"over (the table names 8 of them, -o json 5 and counts the rest in moreClusters). No cluster is needed.\n" +
			"A workload in a namespace fleetflow leaves alone (--skip-namespaces) is shown Skipped, as the placer\n" +
			"never sees it.\n\n" +
			"-o json is an array with one object per workload: workload, policy, status, clusters, replicas (Divide),\n" +
			"reasons (reason -> clusters), moreClusters (reason -> clusters not named), message and pods\n" +
			"(\"cluster/node\" -> {component: pods}).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			in, err := simulate.Load(args[0])
			if err != nil {
				return err
			}
			if in.SkippedNamespaces, err = skippedNamespaces(skip); err != nil {
				return err
			}
			results, err := simulate.Run(in, slog.Default())
			if err != nil {
				return err
			}
			if output.structured() {
				err = output.stream(cmd.OutOrStdout(), func(w io.Writer) error { return simulate.WriteJSON(w, results) })
			} else {
				err = simulate.WriteTable(cmd.OutOrStdout(), results)
			}
			if err != nil || !failOnUnschedulable {
				return err
			}
			return unschedulable(results)
		},
	}
	registerOutput(cmd.Flags(), &output)
	cmd.Flags().BoolVar(&failOnUnschedulable, "fail-on-unschedulable", false,
		"exit 1 when any workload is Unschedulable, after printing every decision (for CI: a policy or a fleet change that strands a workload)")
	registerSkipNamespaces(cmd, &skip)
	// Hidden: a tool for whoever tunes simulate on a big fleet file, not part of what it offers users.
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	_ = cmd.Flags().MarkHidden("cpuprofile")
	return cmd
}

// startCPUProfile starts profiling into path; the returned function stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// unschedulable names the workloads the simulation left Unschedulable, nil when none.
func unschedulable(results []simulate.Result) error {
	var names []string
	for _, r := range results {
		if r.Status == string(structs.StatusUnschedulable) {
			names = append(names, r.Workload)
		}
	}
	if len(names) == 0 {
		return nil
	}
	shown := names
	if len(shown) > 10 {
		shown = shown[:10]
	}
	more := ""
	if len(names) > len(shown) {
		more = fmt.Sprintf(" and %d more", len(names)-len(shown))
	}
	return fmt.Errorf("%d workloads Unschedulable: %s%s", len(names), strings.Join(shown, ", "), more)
}
