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
		Long: "simulate loads a fleet file (namespaces, clusters with their nodes, policies, extra ResourceInterfaces\n" +
			"and workloads), places the workloads one after another through the placement core, each decision's\n" +
			"reservations counting against the next, and prints each decision with a reason for every rejected\n" +
			"cluster. No cluster is needed. A workload in a namespace fleetflow leaves alone (--skip-namespaces) is\n" +
			"shown Skipped, as the placer never sees it.",
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
