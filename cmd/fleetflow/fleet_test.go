package main

import (
	"bytes"
	"strings"
	"testing"
)

// These tests stop before any process starts; the real fleet is covered by internal/localfleet's tests.

func TestFleetUpRejectsClusterCountThatDisagreesWithTheFleetFile(t *testing.T) {
	// deploy/fleets/demo.yaml describes three clusters.
	err := runFleetCommand(t, "up", "--dir", t.TempDir(), "--fleet", "../../deploy/fleets/demo.yaml", "--clusters", "2")
	if err == nil || !strings.Contains(err.Error(), "--clusters 2 disagrees") {
		t.Errorf("got %v, want a disagreement error", err)
	}
}

func TestFleetUpReportsMissingBinaries(t *testing.T) {
	err := runFleetCommand(t, "up", "--dir", t.TempDir(), "--bin-dir", t.TempDir(), "--clusters", "1")
	if err == nil || !strings.Contains(err.Error(), "go tool task tools") {
		t.Errorf("got %v, want the missing binaries and how to build them", err)
	}
}

func TestFleetDownWithoutFleet(t *testing.T) {
	var out bytes.Buffer
	cmd := newFleetCommand()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"down", "--dir", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no running fleet processes") {
		t.Errorf("output %q", out.String())
	}
}

func runFleetCommand(t *testing.T, args ...string) error {
	t.Helper()
	cmd := newFleetCommand()
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs(args)
	return cmd.Execute()
}
