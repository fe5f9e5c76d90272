package localfleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// process is one child process of the fleet: started in its own process group, logging to a file, with its
// pid recorded in a pid file so another process can stop it.
type process struct {
	name    string
	pid     int
	logPath string
	pidPath string
	cmd     *exec.Cmd
	// exited is closed once the process has been reaped; waitErr is its exit status.
	exited  chan struct{}
	waitErr error
	// stopRequested is set before a deliberate stop of this one process, so its exit is not a crash.
	stopRequested atomic.Bool
}

type processSpec struct {
	name    string
	binary  string
	args    []string
	logPath string
	pidPath string
	// env is added to this process's environment.
	env []string
	// detach leaves the process running when this process exits; otherwise the kernel kills it then.
	detach bool
}

func startProcess(spec processSpec) (*process, error) {
	logFile, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.name, err)
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor
	cmd := exec.Command(spec.binary, spec.args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), spec.env...)
	// Its own process group: a terminal's Ctrl-C reaches only us, and Stop can signal the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !spec.detach {
		setParentDeathSignal(cmd.SysProcAttr)
	}
	if err := spawn(cmd); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", spec.name, spec.binary, err)
	}
	p := &process{
		name:    spec.name,
		pid:     cmd.Process.Pid,
		logPath: spec.logPath,
		pidPath: spec.pidPath,
		cmd:     cmd,
		exited:  make(chan struct{}),
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := os.WriteFile(spec.pidPath, []byte(strconv.Itoa(p.pid)+"\n"), 0o644); err != nil {
		_ = p.stop(context.Background(), 5*time.Second)
		return nil, fmt.Errorf("start %s: write pid file: %w", spec.name, err)
	}
	return p, nil
}

func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace or when ctx ends, and waits until the
// process is reaped.
func (p *process) stop(ctx context.Context, grace time.Duration) error {
	defer func() { _ = os.Remove(p.pidPath) }()
	if p.hasExited() {
		return nil
	}
	signalGroup(p.pid, syscall.SIGTERM)
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return p.kill()
}

// kill sends SIGKILL to the process group at once and waits until the process is reaped.
func (p *process) kill() error {
	defer func() { _ = os.Remove(p.pidPath) }()
	signalGroup(p.pid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("kill %s (pid %d): still running 10s after SIGKILL", p.name, p.pid)
	}
}

// signalGroup signals the process group led by pid, and pid itself in case it left the group.
func signalGroup(pid int, sig syscall.Signal) {
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
}

// spawner starts every child from one goroutine locked to its OS thread. Linux delivers the parent-death
// signal when the thread that forked the child exits, not the process, so the forking thread must live as
// long as the process does.
var spawner struct {
	once     sync.Once
	requests chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.requests = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must outlive its children
			for req := range spawner.requests {
				req.done <- req.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.requests <- spawnRequest{cmd: cmd, done: done}
	return <-done
}

// ProcessAlive reports whether pid names a running process (a zombie counts as gone).
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// No procfs (not Linux): trust kill(0).
		return !errors.Is(err, os.ErrNotExist) || runtime.GOOS != "linux"
	}
	// The state follows the parenthesised command name, which may itself contain parentheses.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := strings.Fields(string(rest))
	return len(fields) == 0 || (fields[0] != "Z" && fields[0] != "X")
}

// processBelongsTo reports whether pid's command line mentions dir. Every fleet process has the fleet
// directory in its flags, so this guards against signalling an unrelated process that reused a stale pid.
func processBelongsTo(pid int, dir string) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return runtime.GOOS != "linux" // cannot check without procfs
	}
	return bytes.Contains(cmdline, []byte(dir))
}

// stopPID stops a fleet process that another process started: SIGTERM to its group, SIGKILL after grace,
// then waits until it is gone.
func stopPID(ctx context.Context, pid int, grace time.Duration) error {
	signalGroup(pid, syscall.SIGTERM)
	graceCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if pollUntil(graceCtx, 50*time.Millisecond, func() bool { return !ProcessAlive(pid) }) == nil {
		return nil
	}
	signalGroup(pid, syscall.SIGKILL)
	killCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pollUntil(killCtx, 50*time.Millisecond, func() bool { return !ProcessAlive(pid) }); err != nil {
		return fmt.Errorf("pid %d still running after SIGKILL: %w", pid, err)
	}
	return nil
}

// pollUntil calls cond every interval until it returns true, or returns ctx's error.
func pollUntil(ctx context.Context, interval time.Duration, cond func() bool) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if cond() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ticker.C:
		}
	}
}

// tailFile returns the last n lines of a file, for error messages about a process that failed.
func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer func() { _ = f.Close() }()
	const window = 64 << 10
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	offset := max(info.Size()-window, 0)
	buf := make([]byte, info.Size()-offset)
	if _, err := f.ReadAt(buf, offset); err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "(log is empty)"
	}
	return strings.Join(lines, "\n")
}

// readPIDFiles returns the pids recorded under dir, keyed by pid file path.
func readPIDFiles(dir string) (map[string]int, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.pid"))
	if err != nil {
		return nil, err
	}
	clusterPaths, err := filepath.Glob(filepath.Join(dir, clustersDirName, "*", "*.pid"))
	if err != nil {
		return nil, err
	}
	pids := map[string]int{}
	for _, path := range append(paths, clusterPaths...) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return nil, fmt.Errorf("pid file %s: %w", path, err)
		}
		pids[path] = pid
	}
	return pids, nil
}
