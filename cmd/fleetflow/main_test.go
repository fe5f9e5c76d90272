package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
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
		if strings.Contains(c.Use, "CR_FILE") || strings.Contains(c.Use, "FLEET.yaml") || strings.Contains(c.Use, "KIND/NAMESPACE/NAME") {
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

// TestCommandsRefuseBadValues: a value a flag cannot mean is refused, naming the flag, before anything
// starts, instead of quietly meaning a default or failing later with another message. Each case's other
// flags make a command that would not refuse it fail fast instead of starting a server or a fleet.
func TestCommandsRefuseBadValues(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"fleet up with a negative timeout", []string{"fleet", "up", "--timeout", "-1s", "--dir", "DATA", "--bin-dir", "DATA"},
			"--timeout -1s: must be positive"},
		{"fleet up with no timeout", []string{"fleet", "up", "--timeout", "0s", "--dir", "DATA", "--bin-dir", "DATA"},
			"--timeout 0s: must be positive"},
		{"fleet up with a fleet file that is not there", []string{"fleet", "up", "--fleet", "DATA/none.yaml", "--dir", "DATA", "--bin-dir", "DATA"},
			"--fleet: open "},
		{"analyze with an RI file that is not there", []string{"analyze", "--ri", "DATA/none.yaml", "DATA/cr.yaml"},
			"--ri: open "},
		{"demo with a negative timeout", []string{"demo", "--timeout", "-1s", "--dir", "DATA", "--bin-dir", "DATA", "--fleet", "DATA/none.yaml"},
			"--timeout -1s: must be positive"},
		{"demo with a fleet file that is not there", []string{"demo", "--dir", "DATA", "--bin-dir", "DATA", "--fleet", "DATA/none.yaml"},
			"--fleet: open "},
		{"demo with a workloads file that is not there", []string{"demo", "--dir", "DATA", "--bin-dir", "DATA",
			"--fleet", "../../deploy/fleets/demo.yaml", "--crds", "../../deploy/demo/crds.yaml", "--policies", "../../deploy/demo/policies.yaml",
			"--workloads", "DATA/none.yaml"},
			"--workloads: open "},
		{"fleet down with a negative grace", []string{"fleet", "down", "--grace", "-5s", "--dir", "DATA"},
			"--grace -5s: must be 0 (SIGKILL at once) or more"},
		{"bench pipeline with a negative timeout", []string{"bench", "pipeline", "--timeout", "-1s", "--workloads", "0"},
			"--timeout -1s: must be 0 (no limit) or more"},
		{"bench pipeline with a negative GC target", []string{"bench", "pipeline", "--gc-percent", "-5", "--workloads", "0"},
			"--gc-percent -5: must be 0 (Go's default) or more"},
		{"bench binding with an unknown kind", []string{"bench", "binding", "--kinds", "mpijob"}, `--kinds: unknown kind "mpijob"`},
		{"bench binding with an unknown mode", []string{"bench", "binding", "--modes", "summed-most"}, `--modes: unknown mode "summed-most"`},
		{"placer with an unknown fit mode", []string{"placer", "--fit", "karmada"}, `--fit: fit mode "karmada"`},
		{"placer with a negative GC target", []string{"placer", "--gc-percent", "-1", "--nats-url", "nats://127.0.0.1:1", "--data-dir", "DATA"},
			"--gc-percent -1: must be 0 (Go's default) or more"},
		{"run with a negative GC target", []string{"run", "--gc-percent", "-1", "--control-plane", "DATA/none", "--data-dir", "DATA"},
			"--gc-percent -1: must be 0 (Go's default) or more"},
		{"ui with a token file that is not there", []string{"ui", "--token-file", "DATA/none", "--nats-url", "nats://127.0.0.1:1"},
			"--token-file: open "},
		{"ui with no heartbeat timeout", []string{"ui", "--heartbeat-timeout", "0s", "--nats-url", "nats://127.0.0.1:1"},
			"--heartbeat-timeout 0s: must be positive"},
		{"run with a UI token file that is not there", []string{"run", "--ui", "127.0.0.1:0", "--ui-token-file", "DATA/none",
			"--control-plane", "DATA/none", "--data-dir", "DATA"}, "--ui-token-file: open "},
		{"replay from a file that is not there", []string{"replay", "--from", "DATA/none.jsonl"}, "--from: open "},
		{"replay from a file and NATS", []string{"replay", "--from", "DATA/none.jsonl", "--nats-url", "nats://127.0.0.1:1"},
			"--from and --nats-url: give one of them"},
		{"replay since a time that is none", []string{"replay", "--from", "DATA/none.jsonl", "--since", "yesterday"},
			`--since "yesterday": want an RFC 3339 time`},
		{"replay with a policy file that is not there", []string{"replay", "--from", "DATA/none.jsonl", "--policy", "DATA/none.yaml"},
			"--policy: open "},
		{"explain in xml", []string{"explain", "PyTorchJob/a/b", "--from", "DATA/none.jsonl", "-o", "xml"},
			`invalid argument "xml" for "-o, --output" flag: want table, json or yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := executeIn(t, newRootCommand(), tt.args, t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// executeIn runs cmd with args, each "DATA" in them replaced by dir, its output discarded, and returns its error.
func executeIn(t *testing.T, cmd *cobra.Command, args []string, dir string) error {
	t.Helper()
	replaced := make([]string, len(args))
	for i, a := range args {
		replaced[i] = strings.ReplaceAll(a, "DATA", dir)
	}
	cmd.SetArgs(replaced)
	cmd.SetOut(&strings.Builder{})
	cmd.SetErr(&strings.Builder{})
	return cmd.ExecuteContext(t.Context())
}

// TestClientGoLogsComeOutAsFleetflowLogs: client-go's klog lines (an unreachable apiserver) go through the
// command's slog handler, structured and filtered by --log-level, instead of klog's own format beside it.
func TestClientGoLogsComeOutAsFleetflowLogs(t *testing.T) {
	for _, tc := range []struct {
		level, format string
		wantError     bool
		wantInfo      bool
	}{
		{"info", "text", true, true},
		{"error", "text", true, false},
		{"info", "json", true, true},
	} {
		t.Run(tc.level+"/"+tc.format, func(t *testing.T) {
			stderr := filepath.Join(t.TempDir(), "stderr")
			f, err := os.Create(stderr)
			if err != nil {
				t.Fatal(err)
			}
			realStderr := os.Stderr
			os.Stderr = f // the handler is built on os.Stderr when a command starts
			defer func() {
				os.Stderr = realStderr
				_ = f.Close() // only read back by name
				slog.SetDefault(slog.New(slog.NewTextHandler(realStderr, nil)))
				klog.ClearLogger()
			}()
			// Any command sets the logging up before it runs; this one then fails on its missing file.
			if err := executeIn(t, newRootCommand(), []string{"--log-level", tc.level, "--log-format", tc.format, "analyze", "DATA/missing.yaml"}, t.TempDir()); err == nil {
				t.Fatal("analyze of a missing file succeeded")
			}
			klog.ErrorS(errors.New("connection refused"), "Couldn't get current server API group list")
			klog.InfoS("Caches populated")
			klog.Flush()
			data, err := os.ReadFile(stderr)
			if err != nil {
				t.Fatal(err)
			}
			out := string(data)
			wantErrorLine := `level=ERROR msg="Couldn't get current server API group list" err="connection refused"`
			wantInfoLine := `level=INFO msg="Caches populated"`
			if tc.format == "json" {
				wantErrorLine = `"level":"ERROR","msg":"Couldn't get current server API group list","err":"connection refused"`
				wantInfoLine = `"level":"INFO","msg":"Caches populated"`
			}
			if got := strings.Contains(out, wantErrorLine); got != tc.wantError {
				t.Errorf("error line present %v, want %v:\n%s", got, tc.wantError, out)
			}
			if got := strings.Contains(out, wantInfoLine); got != tc.wantInfo {
				t.Errorf("info line present %v, want %v:\n%s", got, tc.wantInfo, out)
			}
		})
	}
}

// TestUsageErrorsExitWithTwo: a mistake in how a command is called exits 2, as for other Unix commands, and one in
// what it did exits 1, so a script tells a typo from a failure.
func TestUsageErrorsExitWithTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"an unknown flag", []string{"placer", "--no-such-flag"}, 2},
		{"a flag with a bad value", []string{"placer", "--pending-timeout", "soon"}, 2},
		{"a stray argument", []string{"placer", "now"}, 2},
		{"a misspelt subcommand", []string{"audit", "tial"}, 2},
		{"a cluster flag without a kubeconfig", []string{"applier", "--cluster", "east"}, 2},
		{"two kubeconfigs for the control plane", []string{"status", "--control-plane", "a", "--kubeconfig", "b"}, 2},
		{"a log format there is not", []string{"--log-format", "yaml", "version"}, 2},
		{"a version output there is not", []string{"version", "-o", "xml"}, 2},
		{"a fleet file that is not there", []string{"simulate", "DATA/none.yaml"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := executeIn(t, newRootCommand(), tt.args, t.TempDir())
			if got := exitCode(err); got != tt.want {
				t.Errorf("exit code %d (error %v), want %d", got, err, tt.want)
			}
		})
	}
}

// TestVersionSaysWhatBuiltIt: version names the stamped release (main.version) and the Go that built it, in
// JSON for tools.
func TestVersionSaysWhatBuiltIt(t *testing.T) {
	saved := version
	t.Cleanup(func() { version = saved })
	version = "1.2.3"
	cmd := newRootCommand()
	var out strings.Builder
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"version", "-o", "json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	var got buildVersion
	if err := json.Unmarshal([]byte(out.String()), &got); err != nil {
		t.Fatalf("version -o json printed %q: %v", out.String(), err)
	}
	if got.Version != "1.2.3" || got.Go != runtime.Version() || got.Platform == "" {
		t.Errorf("version = %+v, want 1.2.3 built by %s", got, runtime.Version())
	}
}

// TestStructuredOutputsAgree: -o yaml says what -o json says, field for field.
func TestStructuredOutputsAgree(t *testing.T) {
	cr := writeFile(t, "rc.yaml", testRayCluster)
	var asJSON, asYAML bytes.Buffer
	if err := runAnalyze(nil, &asJSON, io.Discard, nil, cr, outputJSON); err != nil {
		t.Fatal(err)
	}
	if err := runAnalyze(nil, &asYAML, io.Discard, nil, cr, outputYAML); err != nil {
		t.Fatal(err)
	}
	fromYAML, err := sigsyaml.YAMLToJSON(asYAML.Bytes())
	if err != nil {
		t.Fatalf("-o yaml printed no YAML: %v\n%s", err, asYAML.String())
	}
	var a, b any
	if err := json.Unmarshal(asJSON.Bytes(), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fromYAML, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("-o yaml and -o json differ:\n%s\n%s", asYAML.String(), asJSON.String())
	}
}
