package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/placement/karta"
)

func init() { registerCommand(newAnalyzeCommand) }

func newAnalyzeCommand() *cobra.Command {
	var riFiles []string
	var output string
	cmd := &cobra.Command{
		Use:   "analyze [--ri FILE]... CR_FILE [-o json|table]",
		Short: "Show the pods, requests, gang groups and status a framework CR asks for, as read through its ResourceInterface",
		Long: "analyze reads one framework CR (YAML or JSON) and prints what placement would reserve for it.\n" +
			"Without --ri the built-in ResourceInterfaces are used; with --ri only the given RI files are\n" +
			"(Karta compatibility mode). The RI is chosen by the CR's group, version and kind.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(cmd.OutOrStdout(), cmd.ErrOrStderr(), riFiles, args[0], output)
		},
	}
	cmd.Flags().StringArrayVar(&riFiles, "ri", nil, "ResourceInterface file to use instead of the built-ins (repeatable)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: json or table")
	return cmd
}

func runAnalyze(w, warnings io.Writer, riFiles []string, crFile, output string) error {
	if output != "json" && output != "table" {
		return fmt.Errorf("--output %q: want json or table", output)
	}
	registry, fromFiles, err := loadRegistry(riFiles, warnings)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(crFile)
	if err != nil {
		return err
	}
	obj, err := karta.ParseObject(data, crFile)
	if err != nil {
		return err
	}
	gvk := karta.GVKOf(obj)
	ri, ok := registry.Lookup(gvk)
	if !ok {
		// An older version a CRD still serves (ray.io/v1alpha1 beside v1): fleetflow watches the kind in the
		// version its RI names, so the apiserver hands it such an object in that version.
		if other, found := registry.LookupOtherVersion(gvk); found {
			_, _ = fmt.Fprintf(warnings, "fleetflow analyze: %s: no ResourceInterface for %s; read as %s, the version %s describes\n",
				crFile, gvk.GroupVersion(), other.GVK.GroupVersion(), other.Name)
			obj["apiVersion"] = other.GVK.GroupVersion().String()
			ri, ok = other, true
		}
	}
	if !ok {
		where := "the built-in ResourceInterfaces"
		if fromFiles {
			where = "the --ri files"
		}
		return fmt.Errorf("%s: no ResourceInterface for %s in %s", crFile, gvk, where)
	}
	analysis, err := ri.Analyze(obj)
	if err != nil {
		return fmt.Errorf("%s: %w", crFile, err)
	}
	shown := ""
	if fromFiles {
		shown = ri.Source
	}
	if output == "json" {
		return karta.WriteJSON(w, analysis, shown)
	}
	return karta.WriteTable(w, analysis, shown)
}

// loadRegistry compiles the --ri files, or falls back to the built-ins when there are none.
func loadRegistry(riFiles []string, warnings io.Writer) (*karta.Registry, bool, error) {
	if len(riFiles) == 0 {
		builtins, err := karta.Builtins()
		if err != nil {
			return nil, false, fmt.Errorf("built-in ResourceInterfaces: %w", err)
		}
		return karta.NewRegistry(builtins...), false, nil
	}
	var compiled []*karta.Compiled
	for _, file := range riFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, true, err
		}
		ris, err := karta.ParseResourceInterfaces(data, file)
		if err != nil {
			return nil, true, err
		}
		if len(ris) == 0 {
			return nil, true, errors.New(file + ": no ResourceInterface in file")
		}
		for _, ri := range ris {
			c, err := karta.Compile(ri, file)
			if err != nil {
				return nil, true, err
			}
			for _, w := range c.Warnings {
				fmt.Fprintf(warnings, "warning: %s: ResourceInterface %s: %s\n", file, c.Name, w)
			}
			compiled = append(compiled, c)
		}
	}
	return karta.NewRegistry(compiled...), true, nil
}
