package localfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests use small shell scripts in place of etcd and kube-apiserver: they exercise process handling
// and failure reporting without the real binaries.

func TestStopKillsTheProcessGroup(t *testing.T) {
	dir := t.TempDir()
	childPIDFile := filepath.Join(dir, "child.pid")
	// The shell starts a child in its group and waits: stopping the shell must take the child with it.
	proc, err := startProcess(processSpec{
		name:    "shell",
		binary:  "/bin/sh",
		args:    []string{"-c", "sleep 300 & echo $! > " + childPIDFile + "; wait"},
		logPath: filepath.Join(dir, "shell.log"),
		pidPath: filepath.Join(dir, "shell.pid"),
	})
	if err != nil {
		t.Fatal(err)
	}
	child := waitForPIDFile(t, childPIDFile)
	if !ProcessAlive(proc.pid) || !ProcessAlive(child) {
		t.Fatalf("shell %d or child %d not running before stop", proc.pid, child)
	}
	if err := proc.stop(context.Background(), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(proc.pid) {
		t.Errorf("shell %d alive after stop", proc.pid)
	}
	// The child is reparented when the shell dies; it is gone once the group signal reached it.
	eventually(t, 5*time.Second, func() bool { return !ProcessAlive(child) }, "child of the stopped shell exits")
	if _, err := os.Stat(proc.pidPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file %s left after stop", proc.pidPath)
	}
}

func TestStopEscalatesToSIGKILL(t *testing.T) {
	dir := t.TempDir()
	proc, err := startProcess(processSpec{
		name:    "stubborn",
		binary:  "/bin/sh",
		args:    []string{"-c", "trap '' TERM; echo trapped; while :; do sleep 0.1; done"},
		logPath: filepath.Join(dir, "stubborn.log"),
		pidPath: filepath.Join(dir, "stubborn.pid"),
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() bool { return strings.Contains(tailFile(proc.logPath, 1), "trapped") }, "trap installed")
	if err := proc.stop(context.Background(), 200*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(proc.pid) {
		t.Errorf("pid %d ignored SIGTERM and survived SIGKILL", proc.pid)
	}
}

func TestDownStopsOnlyFleetProcesses(t *testing.T) {
	dir := t.TempDir()
	// The fleet directory appears in the command line, as it does in every real fleet process's flags.
	proc, err := startProcess(processSpec{
		name:    "fake etcd",
		binary:  "/bin/sh",
		args:    []string{"-c", "sleep 300; :", dir},
		logPath: filepath.Join(dir, "etcd.log"),
		pidPath: filepath.Join(dir, "etcd.pid"),
		detach:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = proc.stop(context.Background(), time.Second) }()
	// Right after the fork the child still runs the test binary's command line; Down judges a process by
	// its command line, so wait until the exec has happened, as it long has for a real fleet.
	eventually(t, 5*time.Second, func() bool { return processBelongsTo(proc.pid, dir) }, "the fake etcd exec'd")
	// A stale pid file naming a process of someone else (this test binary) must not be signalled.
	strangerDir := filepath.Join(dir, clustersDirName, "stale")
	if err := os.MkdirAll(strangerDir, 0o755); err != nil {
		t.Fatal(err)
	}
	strangerPIDFile := filepath.Join(strangerDir, "apiserver.pid")
	if err := os.WriteFile(strangerPIDFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}

	stopped, err := Down(context.Background(), dir, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(stopped) != 1 || stopped[0] != proc.pid {
		t.Errorf("Down stopped %v, want only the fake etcd %d", stopped, proc.pid)
	}
	if ProcessAlive(proc.pid) {
		t.Errorf("fake etcd %d alive after Down", proc.pid)
	}
	for _, path := range []string{proc.pidPath, strangerPIDFile} {
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("pid file %s left after Down", path)
		}
	}
}

func TestStartFailureReportsLogTailAndCleansUp(t *testing.T) {
	binDir := fakeBinDir(t, `for i in $(seq 1 30); do echo "etcd line $i"; done; exit 3`)
	dir := t.TempDir()
	_, err := Start(context.Background(), Options{Dir: dir, BinDir: binDir, Logger: discardLogger()})
	if err == nil {
		t.Fatal("Start succeeded with an etcd that exits")
	}
	msg := err.Error()
	// 30 lines written, the last logTailLines (20) reported: lines 11 to 30.
	for _, want := range []string{"exited", "exit status 3", "etcd line 11\n", "etcd line 30"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "etcd line 10\n") {
		t.Errorf("error has more than the last %d lines:\n%s", logTailLines, msg)
	}
	assertNoPIDFiles(t, dir)
}

func TestStartTimeoutReportsLogTailAndKills(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "fake.pid")
	binDir := fakeBinDir(t, fmt.Sprintf(`echo $$ > %s; echo "etcd is thinking"; exec sleep 300`, pidFile))
	_, err := Start(context.Background(), Options{Dir: dir, BinDir: binDir, Logger: discardLogger(), StartTimeout: time.Second})
	if err == nil {
		t.Fatal("Start succeeded with an etcd that never answers")
	}
	for _, want := range []string{"not ready after", "etcd is thinking"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	pid := waitForPIDFile(t, pidFile)
	if ProcessAlive(pid) {
		t.Errorf("etcd %d still running after the failed Start", pid)
	}
	assertNoPIDFiles(t, dir)
}

func TestStartRetriesWhenThePortIsTaken(t *testing.T) {
	attempts := filepath.Join(t.TempDir(), "attempts")
	binDir := fakeBinDir(t, fmt.Sprintf(`echo x >> %s; echo "listen tcp 127.0.0.1:1: bind: address already in use"; exit 1`, attempts))
	_, err := Start(context.Background(), Options{Dir: t.TempDir(), BinDir: binDir, Logger: discardLogger()})
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Start: got %v, want the bind error", err)
	}
	data, _ := os.ReadFile(attempts)
	if got := strings.Count(string(data), "x"); got != startAttempts {
		t.Errorf("etcd started %d times, want %d", got, startAttempts)
	}
}

func TestStartRejectsClusterNames(t *testing.T) {
	binDir := fakeBinDir(t, "exit 1")
	tests := []struct {
		name     string
		clusters []string
		want     string
	}{
		{"control plane name", []string{"east", ControlPlaneName}, `Clusters[1]: "control-plane" is reserved`},
		{"not a DNS label", []string{"East_1"}, `Clusters[0]: invalid cluster name "East_1"`},
		{"duplicate", []string{"east", "east"}, `Clusters[1]: duplicate cluster name "east"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Start(context.Background(), Options{Dir: t.TempDir(), BinDir: binDir, Clusters: tt.clusters})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestStartRefusesAForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	precious := filepath.Join(dir, "etcd")
	if err := os.WriteFile(precious, []byte("not a fleet's"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{Dir: dir, BinDir: fakeBinDir(t, "exit 1")})
	if err == nil || !strings.Contains(err.Error(), "holds no fleet") {
		t.Errorf("got %v, want a refusal", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Errorf("Start removed a file of a foreign directory: %v", err)
	}
}

func TestStartReusesAStoppedFleetDirectory(t *testing.T) {
	dir := t.TempDir()
	binDir := fakeBinDir(t, "echo fake etcd; exit 1")
	for range 2 {
		_, err := Start(context.Background(), Options{Dir: dir, BinDir: binDir, Logger: discardLogger()})
		if err == nil || !strings.Contains(err.Error(), "fake etcd") {
			t.Fatalf("got %v, want the fake etcd's failure (not a refusal of the directory)", err)
		}
	}
}

func TestStartNamesMissingBinaries(t *testing.T) {
	_, err := Start(context.Background(), Options{Dir: t.TempDir(), BinDir: t.TempDir()})
	var missing *MissingBinariesError
	if !errors.As(err, &missing) || len(missing.Paths) != 2 || !strings.Contains(err.Error(), "go tool task tools") {
		t.Errorf("got %v, want both binaries named and how to build them", err)
	}
}

func TestStartNamesMissingRunPodsBinaries(t *testing.T) {
	binDir := fakeBinDir(t, "exit 1")
	_, err := Start(context.Background(), Options{Dir: t.TempDir(), BinDir: binDir, RunPods: true})
	var missing *MissingBinariesError
	if !errors.As(err, &missing) || len(missing.Paths) != 3 || !strings.Contains(err.Error(), "go tool task tools") {
		t.Errorf("got %v, want kube-scheduler, kube-controller-manager and kwok named and how to build them", err)
	}
}

func TestFailingChecks(t *testing.T) {
	tests := []struct {
		body string
		want string
	}{
		{"[+]ping ok\n[-]etcd failed: reason withheld\nreadyz check failed", "failing: etcd"},
		{"[-]a failed\n[-]b failed\n[-]c failed\n[-]d failed", "4 checks failing: a, b, c, ..."},
		{"forbidden", "forbidden"},
	}
	for _, tt := range tests {
		if got := failingChecks(tt.body); got != tt.want {
			t.Errorf("failingChecks(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestTailFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte("1\n2\n3\n4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tailFile(path, 2); got != "3\n4" {
		t.Errorf("tail 2: got %q", got)
	}
	if got := tailFile(path, 10); got != "1\n2\n3\n4" {
		t.Errorf("tail 10: got %q", got)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := tailFile(empty, 3); got != "(log is empty)" {
		t.Errorf("empty: got %q", got)
	}
}

// fakeBinDir writes an etcd script with the given body and a kube-apiserver that fails.
func fakeBinDir(t *testing.T, etcdScript string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{EtcdBinary: etcdScript, APIServerBinary: "echo fake apiserver; exit 1"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func waitForPIDFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, 5*time.Second, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(data)))
		return err == nil
	}, "pid file "+path)
	return pid
}

func assertNoPIDFiles(t *testing.T, dir string) {
	t.Helper()
	pids, err := readPIDFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pids) > 0 {
		t.Errorf("pid files left: %v", pids)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func eventually(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := pollUntil(ctx, 20*time.Millisecond, cond); err != nil {
		t.Fatalf("%s: not true after %s", what, timeout)
	}
}
