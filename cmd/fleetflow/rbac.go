package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/placement/karta"
)

func init() { registerCommand(newRBACCommand) }

func newRBACCommand() *cobra.Command {
	var riFiles, policyFiles []string
	var workloadCluster bool
	cmd := &cobra.Command{
		Use:   "rbac [--ri FILE]... [--policies FILE]... [--workload-cluster]",
		Short: "Print the Helm values that let fleetflow read and write exactly the kinds it places",
		Long: `rbac prints the values of the fleetflow chart (or, with --workload-cluster, of the
fleetflow-workload-cluster chart) that grant fleetflow the kinds it handles and no more: the kinds of the
built-in ResourceInterfaces and of the --ri files, and the kinds the SchedulePolicies of the --policies files
name. Their API groups go to workloadAPIGroups; a kind of the core group gets a rule of its own (the whole
core group would hold every Secret). Use it as: helm install ... -f <(fleetflow rbac --policies p.yaml).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRBAC(cmd.OutOrStdout(), cmd.ErrOrStderr(), riFiles, policyFiles, workloadCluster)
		},
	}
	cmd.Flags().StringArrayVar(&riFiles, "ri", nil, "ResourceInterface file whose kinds fleetflow places too (repeatable)")
	cmd.Flags().StringArrayVar(&policyFiles, "policies", nil, "file of SchedulePolicies whose kinds fleetflow handles (repeatable)")
	cmd.Flags().BoolVar(&workloadCluster, "workload-cluster", false, "print the values of the fleetflow-workload-cluster chart")
	return cmd
}

func runRBAC(out, warnings io.Writer, riFiles, policyFiles []string, workloadCluster bool) error {
	kinds, err := handledKinds(riFiles, policyFiles, warnings)
	if err != nil {
		return err
	}
	verbs := []string{"get", "list", "watch", "patch", "update"}
	if workloadCluster {
		verbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	}
	groups, rules := rbacFor(kinds, verbs)
	values := map[string]any{"rbac": map[string]any{"workloadAPIGroups": groups, "extraReadRules": rules}}
	chart := "deploy/chart/fleetflow"
	if workloadCluster {
		values = map[string]any{"ownRole": map[string]any{"workloadAPIGroups": groups, "extraRules": rules}}
		chart = "deploy/chart/fleetflow-workload-cluster"
	}
	data, err := sigsyaml.Marshal(values)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "# Values for %s from `fleetflow rbac`: the groups of %d kinds.\n%s", chart, len(kinds), data)
	return err
}

// handledKinds are the kinds of the built-in RIs, of the RI files and of the policies' resource selectors.
func handledKinds(riFiles, policyFiles []string, warnings io.Writer) ([]schema.GroupKind, error) {
	builtins, err := karta.Builtins()
	if err != nil {
		return nil, fmt.Errorf("built-in ResourceInterfaces: %w", err)
	}
	own, err := compileRIFiles(riFiles, warnings)
	if err != nil {
		return nil, err
	}
	seen := map[schema.GroupKind]bool{}
	for _, c := range append(builtins, own...) {
		seen[c.GVK.GroupKind()] = true
	}
	for _, file := range policyFiles {
		objects, err := readObjectsFile(file)
		if err != nil {
			return nil, fmt.Errorf("--policies: %w", err)
		}
		for _, obj := range objects {
			if obj.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: v1alpha1.GroupName, Kind: "SchedulePolicy"}) {
				return nil, fmt.Errorf("--policies: %s: %s %s is not a SchedulePolicy", file, obj.GetKind(), obj.GetName())
			}
			var p v1alpha1.SchedulePolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &p); err != nil {
				return nil, fmt.Errorf("--policies: %s: SchedulePolicy %s: %w", file, obj.GetName(), err)
			}
			for _, k := range p.Spec.ResourceSelectors.Kinds {
				seen[schema.GroupKind{Group: k.Group, Kind: k.Kind}] = true
			}
		}
	}
	if len(seen) == 0 {
		return nil, errors.New("no kind to grant")
	}
	return slices.SortedFunc(maps.Keys(seen), func(a, b schema.GroupKind) int {
		return strings.Compare(a.Group+"/"+a.Kind, b.Group+"/"+b.Kind)
	}), nil
}

// rbacFor grants verbs on kinds: on every resource of their groups, but the core group's kinds one by one.
func rbacFor(kinds []schema.GroupKind, verbs []string) (groups []string, rules []rbacv1.PolicyRule) {
	var core []string
	groups = []string{}
	for _, k := range kinds {
		if k.Group == "" {
			// The plural the apiserver serves a core kind under; the guess is exact for the core group's kinds.
			plural, _ := meta.UnsafeGuessKindToResource(schema.GroupVersionKind{Version: "v1", Kind: k.Kind})
			core = append(core, plural.Resource)
			continue
		}
		groups = append(groups, k.Group)
	}
	slices.Sort(groups)
	groups = slices.Compact(groups)
	rules = []rbacv1.PolicyRule{} // [] rather than null in the values
	if len(core) > 0 {
		slices.Sort(core)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: slices.Compact(core), Verbs: verbs})
	}
	return groups, rules
}
