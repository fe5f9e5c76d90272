package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/logbuf"
)

// TestDemoTellsItsStory runs the demo as `go tool task demo` does: the terminal shows its steps, where each
// CR landed and the nodes its pods run on, while the components' logs go to the file it names, not between
// the steps.
func TestDemoTellsItsStory(t *testing.T) {
	binDir := localfleettest.RequireOperators(t, "training-operator")
	logs = logSettings{level: slog.LevelInfo} // what the root command sets from its flags
	t.Cleanup(func() { logTo(os.Stderr) })
	root := filepath.Join("..", "..")
	dir := t.TempDir()
	o := demoOptions{dir: dir, fleetFile: filepath.Join(root, "deploy/fleets/demo.yaml"),
		crds: filepath.Join(root, "deploy/demo/crds.yaml"), policies: filepath.Join(root, "deploy/demo/policies.yaml"),
		workloads: filepath.Join(root, "deploy/demo/workloads.yaml"), binDir: binDir, natsListen: "127.0.0.1:0",
		timeout: 3 * time.Minute, operators: []string{"training-operator"}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, terminal logbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- runDemo(ctx, o, &out, &terminal) }()

	deadline := time.After(o.timeout + time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(out.String(), "Press Ctrl-C") {
		select {
		case err := <-done:
			t.Fatalf("the demo ended before showing its result: %v\nterminal:\n%s\noutput:\n%s", err, terminal.String(), out.String())
		case <-deadline:
			t.Fatalf("no result after %s\nterminal:\n%s\noutput:\n%s", o.timeout, terminal.String(), out.String())
		case <-tick.C:
		}
	}
	// The auditor reads the story with its own read-only NATS user, as the demo's output shows.
	auditArgs := auditCommandShown(t, out.String())
	var story bytes.Buffer
	cli := newRootCommand()
	cli.SetArgs(append(auditArgs, "-o", "json"))
	cli.SetOut(&story)
	cli.SetErr(&story)
	if err := cli.ExecuteContext(ctx); err != nil {
		t.Errorf("%s: %v\n%s", strings.Join(auditArgs, " "), err, story.String())
	} else if !strings.Contains(story.String(), "placement") {
		t.Errorf("%s shows no placement:\n%s", strings.Join(auditArgs, " "), story.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the demo stopped with %v", err)
	}

	logFile := filepath.Join(dir, "fleetflow.log")
	shown := terminal.String()
	if !strings.Contains(shown, "demo: logs of every component go to "+logFile) || !strings.Contains(shown, "demo: submitting") {
		t.Errorf("the terminal does not name the log file and the steps:\n%s", shown)
	}
	if strings.Contains(shown, "level=") {
		t.Errorf("component logs on the terminal:\n%s", shown)
	}
	if result := out.String(); !strings.Contains(result, "Placements:") || !strings.Contains(result, "Placed") {
		t.Errorf("the result lacks the placements:\n%s", result)
	}
	// llama-finetune's master and three workers take four whole A100 nodes of gpu-west.
	if result := out.String(); !strings.Contains(result, "Runs") || !strings.Contains(result, "a100-0,a100-1,a100-2,a100-3") {
		t.Errorf("the result lacks the runs and their nodes:\n%s", result)
	}
	logged, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(logged, []byte("level=INFO")) || !bytes.Contains(logged, []byte("verdict")) {
		t.Errorf("%s lacks the components' logs:\n%.2000s", logFile, logged)
	}
	if bytes.Contains(bytes.ToLower(logged), []byte("permissions violation")) {
		t.Errorf("a part was refused what it asked of NATS:\n%s", logged)
	}
}

// auditCommandShown is the audit tail command line the demo's output suggests, without "fleetflow".
func auditCommandShown(t *testing.T, out string) []string {
	t.Helper()
	for line := range strings.Lines(out) {
		if fields := strings.Fields(line); len(fields) > 2 && fields[0] == "fleetflow" && fields[1] == "audit" {
			return fields[1:]
		}
	}
	t.Fatalf("the demo shows no audit command:\n%s", out)
	return nil
}
