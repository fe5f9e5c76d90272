package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// allCommands is every command of the tree below root.
func allCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range root.Commands() {
		out = append(out, c)
		out = append(out, allCommands(c)...)
	}
	return out
}

// TestCommandsRefuseStrayArguments: a misspelt subcommand or an argument a command does not take is an
// error (exit 1), not help on exit 0 nor a run that ignores it. The arguments are checked as Execute checks
// them, without running anything.
func TestCommandsRefuseStrayArguments(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"audit", "tial"}, `unknown command "tial" for "fleetflow audit"`},
		{[]string{"fleet", "upp"}, `unknown command "upp" for "fleetflow fleet"`},
		{[]string{"bench", "placment"}, `unknown command "placment" for "fleetflow bench"`},
		{[]string{"placer", "bogus"}, `placer takes no arguments, got ["bogus"]`},
		{[]string{"run", "bogus"}, `run takes no arguments, got ["bogus"]`},
		{[]string{"producer", "bogus"}, `producer takes no arguments`},
		{[]string{"status", "bogus"}, `status takes no arguments`},
		{[]string{"applier", "bogus"}, `applier takes no arguments`},
		{[]string{"audit", "tail", "bogus"}, `unknown command "bogus" for "fleetflow audit tail"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			c, rest, err := newRootCommand().Find(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Runnable() {
				t.Fatalf("%s does not run: Execute prints its help and exits 0 before it checks %q", c.CommandPath(), rest)
			}
			err = c.ValidateArgs(rest)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Every command: one argument more than it takes is refused.
	for _, c := range allCommands(newRootCommand()) {
		extra := []string{"stray"}
		if strings.Contains(c.Use, "CR_FILE") || strings.Contains(c.Use, "FLEET.yaml") {
			extra = []string{"file", "stray"}
		}
		if err := c.ValidateArgs(extra); err == nil || !c.Runnable() {
			t.Errorf("%s accepts %q", c.CommandPath(), extra)
		}
	}
}

// TestFlagHelpNamesAValueType: pflag takes a `quoted` word of a flag's usage as the name of its value, so
// a quoted command line in a usage shows as "--register fleetflow run --control-plane".
func TestFlagHelpNamesAValueType(t *testing.T) {
	for _, c := range append(allCommands(newRootCommand()), newRootCommand()) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " -") {
				t.Errorf("%s --%s: help shows its value as %q", c.CommandPath(), f.Name, name)
			}
		})
	}
}
