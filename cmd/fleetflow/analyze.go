package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/state"
)

func init() { registerCommand(newAnalyzeCommand) }

func newAnalyzeCommand() *cobra.Command {
	var riFiles []string
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "analyze [--ri FILE]... CR_FILE|- [-o table|json|yaml]",
		Short: "Show the pods, requests, gang groups and status a framework CR asks for, as read through its ResourceInterface",
		Long: "analyze reads framework CRs (YAML or JSON; - reads standard input) and prints what placement would\n" +
			"reserve for each. Without --ri the built-in ResourceInterfaces are used; with --ri only the given RI\n" +
			"files are (Karta compatibility mode). The RI is chosen by the CR's group, version and kind.\n" +
			"A file of several documents, or a List, is read object by object: objects no RI describes (a\n" +
			"ConfigMap beside the CR) are skipped with a warning. -o json and -o yaml print an array of reports, of one\n" +
			"CR too. A CR\n" +
			"whose analysis fails is named with its line and the reason after the others are printed, and the\n" +
			"command then exits non-zero.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyze(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), riFiles, args[0], output)
		},
	}
	cmd.Flags().StringArrayVar(&riFiles, "ri", nil, "ResourceInterface file to use instead of the built-ins (repeatable)")
	registerOutput(cmd.Flags(), &output)
	return cmd
}

func runAnalyze(stdin io.Reader, w, warnings io.Writer, riFiles []string, crFile string, output outputFormat) error {
	registry, fromFiles, err := loadRegistry(riFiles, warnings)
	if err != nil {
		return err
	}
	var data []byte
	if crFile == "-" {
		crFile = "<stdin>"
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(crFile)
	}
	if err != nil {
		return err
	}
	objects, err := karta.ParseObjects(data, crFile)
	if err != nil {
		return err
	}
	analyzed := 0
	var reports []karta.Report // -o json and yaml print one array, of one CR too
	// A CR of several that cannot be analyzed is reported at the end, with the others analyzed: one bad CR
	// in a file of samples hid the analysis of every other (all of them, with -o json).
	var failed []error
	for _, parsed := range objects {
		source := crFile
		if len(objects) > 1 {
			source = fmt.Sprintf("%s:%d", crFile, parsed.Line)
		}
		analysis, ri, err := analyzeOne(parsed.Object, registry, fromFiles, source, warnings)
		var failure *karta.AnalysisError
		if errors.As(err, &failure) {
			// The message names the CR's field; the RI's jq is for whoever debugs the RI.
			slog.Debug("analysis failed", "object", failure.Object, "resource_interface", failure.RI,
				"component", failure.Component, "ri_field", failure.Field, "expr", failure.Expr)
			if failure.Path != "" {
				err = fmt.Errorf("%s:%d: %w", crFile, parsed.LineOf(failure.Path), failure)
			}
		}
		if err == nil {
			warnUnread(warnings, crFile, parsed, ri)
		}
		var noRI *noResourceInterfaceError
		if len(objects) > 1 && errors.As(err, &noRI) {
			_, _ = fmt.Fprintf(warnings, "fleetflow analyze: %v; skipped\n", err)
			continue
		}
		if err != nil && len(objects) > 1 {
			failed = append(failed, err)
			continue
		}
		if err != nil {
			return err
		}
		shown := ""
		if fromFiles {
			shown = ri.Source
		}
		if output.structured() {
			reports = append(reports, reportOf(analysis, shown))
		} else {
			if analyzed > 0 {
				_, _ = fmt.Fprintln(w)
			}
			if err = karta.WriteTable(w, analysis, shown); err == nil {
				err = writeConstraints(w, analysis)
			}
		}
		if err != nil {
			return err
		}
		analyzed++
	}
	if analyzed == 0 && len(failed) == 0 {
		return fmt.Errorf("%s: none of its %d objects is a kind a ResourceInterface describes", crFile, len(objects))
	}
	if reports != nil {
		if err := output.encode(w, reports); err != nil {
			return err
		}
	}
	return errors.Join(failed...)
}

// reportOf is the JSON report of an analysis, with each component's constraints between pods as placement reads
// them.
func reportOf(a *karta.Analysis, shown string) karta.Report {
	r := karta.NewReport(a, shown)
	for i := range r.Components {
		applied, ignored := state.DescribeConstraints(a.Components[i].PodTemplate)
		if len(applied)+len(ignored) > 0 {
			// Empty lists render as [], not null, as the rest of the report's do.
			r.Components[i].PodConstraints = &karta.PodConstraints{Applied: append([]string{}, applied...),
				Ignored: append([]string{}, ignored...)}
		}
	}
	return r
}

// writeConstraints lists, under the table, each component's constraints between pods: which placement applies,
// and which it leaves out because they name pods it does not see.
func writeConstraints(w io.Writer, a *karta.Analysis) error {
	for _, c := range a.Components {
		applied, ignored := state.DescribeConstraints(c.PodTemplate)
		name := karta.ComponentKey(c.Name, c.Instance)
		if len(applied) > 0 {
			if _, err := fmt.Fprintf(w, "%s: placement applies %s\n", name, strings.Join(applied, "; ")); err != nil {
				return err
			}
		}
		if len(ignored) > 0 {
			if _, err := fmt.Fprintf(w, "%s: placement ignores %s\n", name, strings.Join(ignored, "; ")); err != nil {
				return err
			}
		}
	}
	return nil
}

// noResourceInterfaceError is an object of a kind no ResourceInterface describes.
type noResourceInterfaceError struct {
	source, gvk, where string
}

func (e *noResourceInterfaceError) Error() string {
	return fmt.Sprintf("%s: no ResourceInterface for %s in %s", e.source, e.gvk, e.where)
}

// analyzeOne reads obj through the RI of its kind.
// warnUnread warns of the entries of the CR that look like those its RI reads pods from but that none reads (a
// replica type misspelt, or one the RI does not know), which placement would leave uncounted.
func warnUnread(warnings io.Writer, crFile string, parsed karta.ParsedObject, ri *karta.Compiled) {
	unread, err := ri.Unread(parsed.Object)
	if err != nil {
		return // the analysis read the same paths without error; nothing more to say
	}
	for _, u := range unread {
		_, _ = fmt.Fprintf(warnings, "fleetflow analyze: %s:%d: warning: %s\n", crFile, parsed.LineOf(u.Field), u)
	}
}

func analyzeOne(obj map[string]any, registry *karta.Registry, fromFiles bool, source string, warnings io.Writer) (*karta.Analysis, *karta.Compiled, error) {
	if err := karta.CheckTypeMeta(obj); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", source, err)
	}
	if err := karta.CheckName(obj); err != nil {
		return nil, nil, fmt.Errorf("%s: %s: %w", source, obj["kind"], err)
	}
	gvk := karta.GVKOf(obj)
	ri, ok := registry.Lookup(gvk)
	if !ok {
		// An older version a CRD still serves (ray.io/v1alpha1 beside v1): fleetflow watches the kind in the
		// version its RI names, so the apiserver hands it such an object in that version.
		if other, found := registry.LookupOtherVersion(gvk); found {
			_, _ = fmt.Fprintf(warnings, "fleetflow analyze: %s: no ResourceInterface for %s; read as %s, the version %s describes\n",
				source, gvk.GroupVersion(), other.GVK.GroupVersion(), other.Name)
			obj["apiVersion"] = other.GVK.GroupVersion().String()
			ri, ok = other, true
		}
	}
	if !ok {
		where := "the built-in ResourceInterfaces"
		if fromFiles {
			where = "the --ri files"
		}
		return nil, nil, &noResourceInterfaceError{source: source, gvk: gvk.String(), where: where}
	}
	analysis, err := ri.Analyze(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", source, err)
	}
	return analysis, ri, nil
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
	compiled, err := compileRIFiles(riFiles, warnings)
	if err != nil {
		return nil, true, err
	}
	return karta.NewRegistry(compiled...), true, nil
}

// compileRIFiles compiles every ResourceInterface of the files, writing the parser's warnings.
func compileRIFiles(riFiles []string, warnings io.Writer) ([]*karta.Compiled, error) {
	var compiled []*karta.Compiled
	for _, file := range riFiles {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--ri: %w", err)
		}
		ris, err := karta.ParseResourceInterfaces(data, file)
		if err != nil {
			return nil, err
		}
		if len(ris) == 0 {
			return nil, errors.New(file + ": no ResourceInterface in file")
		}
		for _, ri := range ris {
			c, err := karta.Compile(ri, file)
			if err != nil {
				return nil, err
			}
			for _, w := range c.Warnings {
				fmt.Fprintf(warnings, "warning: %s: ResourceInterface %s: %s\n", file, c.Name, w)
			}
			compiled = append(compiled, c)
		}
	}
	return compiled, nil
}
