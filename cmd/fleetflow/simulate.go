package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/internal/simulate"
)

func init() { registerCommand(newSimulateCommand) }

func newSimulateCommand() *cobra.Command {
	var output string
	var skip []string
	cmd := &cobra.Command{
		Use:   "simulate FLEET.yaml [-o json|table]",
		Short: "Dry-run placement: place a fleet file's workloads in order on its simulated clusters",
		Long: "simulate loads a fleet file: namespaces and clusters with their nodes as in deploy/fleets/demo.yaml,\n" +
			"plus policies (SchedulePolicy objects), resourceInterfaces (RIs used instead of the built-ins for their\n" +
			"kinds) and workloads, each \"file: CR.yaml\" (relative to the fleet file) or \"object: {...}\", with\n" +
			"\"namespace: NS\" to put a CR that names no namespace there, as kubectl apply -n does (else default).\n" +
			"Only kinds an RI describes can be simulated. It places the workloads one after another through the\n" +
			"placement core, each decision's reservations counting against the next, and prints each decision with\n" +
			"a reason for every rejected cluster. No cluster is needed. A workload in a namespace fleetflow leaves\n" +
			"alone (--skip-namespaces) is shown Skipped, as the placer never sees it.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "json" && output != "table" {
				return fmt.Errorf("--output %q: want json or table", output)
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
			if output == "json" {
				return simulate.WriteJSON(cmd.OutOrStdout(), results)
			}
			return simulate.WriteTable(cmd.OutOrStdout(), results)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	registerSkipNamespaces(cmd, &skip)
	return cmd
}
