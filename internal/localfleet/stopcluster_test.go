package localfleet

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeFleet is a started fleet whose etcd and apiservers are sleeping shells, watched for exits like a
// real one.
func fakeFleet(t *testing.T, clusters ...string) *Fleet {
	t.Helper()
	dir := t.TempDir()
	start := func(name string) *process {
		p, err := startProcess(processSpec{
			name:    name,
			binary:  "/bin/sh",
			args:    []string{"-c", "sleep 300 & wait"},
			logPath: filepath.Join(dir, name+".log"),
			pidPath: filepath.Join(dir, name+".pid"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	f := &Fleet{Dir: dir, opts: Options{StopGrace: 5 * time.Second, Logger: discardLogger()},
		stopping: make(chan struct{}), exited: make(chan struct{}), etcd: start("etcd")}
	for i, name := range append([]string{ControlPlaneName}, clusters...) {
		p := start(name)
		c := &Cluster{Name: name, PID: p.pid, proc: p}
		if i == 0 {
			f.ControlPlane = c
		} else {
			f.Workloads = append(f.Workloads, c)
		}
	}
	f.watchExits()
	t.Cleanup(func() { _ = f.Stop(context.Background()) })
	return f
}

func TestStopClusterStopsOnlyThatApiserverAndIsNoCrash(t *testing.T) {
	f := fakeFleet(t, "east", "west")
	east, _ := f.Cluster("east")
	west, _ := f.Cluster("west")
	if err := f.StopCluster(context.Background(), "east"); err != nil {
		t.Fatal(err)
	}
	if ProcessAlive(east.PID) {
		t.Errorf("east's apiserver %d alive after StopCluster", east.PID)
	}
	for _, pid := range []int{f.etcd.pid, f.ControlPlane.PID, west.PID} {
		if !ProcessAlive(pid) {
			t.Errorf("pid %d stopped along with east", pid)
		}
	}
	// Stopping again is a no-op.
	if err := f.StopCluster(context.Background(), "east"); err != nil {
		t.Errorf("second StopCluster: %v", err)
	}

	// A process that really dies is still reported; east's deliberate stop never was. Exits are watched
	// by goroutines, so only the crash reported with west's name proves east's exit was ignored (it
	// happened first and would have won exitOnce).
	signalGroup(west.PID, syscall.SIGKILL)
	select {
	case <-f.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("west's crash was not reported through Exited")
	}
	if err := f.ExitErr(); err == nil || !strings.HasPrefix(err.Error(), "local fleet: west (pid") {
		t.Errorf("ExitErr = %v, want west's crash and nothing about east", err)
	}
	if err := f.Stop(context.Background()); err != nil {
		t.Errorf("Stop after StopCluster: %v", err)
	}
	assertNoPIDFiles(t, f.Dir)
}

func TestStopClusterRejectsUnknownCluster(t *testing.T) {
	f := fakeFleet(t, "east")
	if err := f.StopCluster(context.Background(), "north"); err == nil || !strings.Contains(err.Error(), `"north"`) {
		t.Errorf("StopCluster(north) = %v, want an error naming the cluster", err)
	}
	select {
	case <-f.Exited():
		t.Error("Exited closed though nothing stopped")
	default:
	}
}

// TestStartClusterRefusesWhatStopClusterDidNotStop: only a cluster that StopCluster stopped can be started again
// (a real apiserver restart is covered by the failover e2e test); the refusal names the cluster and why.
func TestStartClusterRefusesWhatStopClusterDidNotStop(t *testing.T) {
	f := fakeFleet(t, "east")
	for _, tc := range []struct {
		cluster, want string
	}{
		{"north", "no such cluster"},
		{"east", "not stopped by StopCluster"},
	} {
		if err := f.StartCluster(context.Background(), tc.cluster); err == nil ||
			!strings.Contains(err.Error(), `"`+tc.cluster+`"`) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("StartCluster(%s) = %v, want an error naming the cluster and saying %q", tc.cluster, err, tc.want)
		}
	}
}

// TestKillClusterKillsAtOnceAndIsNoCrash: KillCluster ends the apiserver with SIGKILL, as a crash would (no
// SIGTERM first to shut down cleanly on), reports no crash through Exited, and leaves the rest running.
func TestKillClusterKillsAtOnceAndIsNoCrash(t *testing.T) {
	f := fakeFleet(t, "east", "west")
	east, _ := f.Cluster("east")
	if err := f.KillCluster("east"); err != nil {
		t.Fatal(err)
	}
	if got := east.proc.waitErr; got == nil || got.Error() != "signal: killed" {
		t.Errorf("east's apiserver ended with %v, want signal: killed", got)
	}
	for _, pid := range []int{f.etcd.pid, f.ControlPlane.PID} {
		if !ProcessAlive(pid) {
			t.Errorf("pid %d stopped along with east", pid)
		}
	}
	select {
	case <-f.Exited():
		t.Errorf("east's kill was reported as a crash: %v", f.ExitErr())
	default:
	}
	if err := f.KillCluster("north"); err == nil || !strings.Contains(err.Error(), `"north"`) {
		t.Errorf("KillCluster(north) = %v, want an error naming the cluster", err)
	}
}
