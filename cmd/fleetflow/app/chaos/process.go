package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ProcessSpec is how to start one fleetflow part.
type ProcessSpec struct {
	// Name names the part in the report and its log file.
	Name string
	// Kind groups parts for the report: placer, applier, producer, status.
	Kind   string
	Binary string
	Args   []string
	// Env is added to this process's environment.
	Env     []string
	LogPath string
}

// Process is one fleetflow part that chaos started and may kill and start again. An exit it did not cause
// is kept for the report, and the part is started again a second later, as a kubelet would.
type Process struct {
	spec ProcessSpec

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	killing bool
	// stopped is set by Stop: the part stays down.
	stopped bool
	crashes []string
}

// StartProcess starts the part.
func StartProcess(spec ProcessSpec) (*Process, error) {
	p := &Process{spec: spec}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// start starts the part unless it runs already or was stopped.
func (p *Process) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil || p.stopped {
		return nil // started meanwhile (a restart after a crash), or to stay down
	}
	log, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", p.spec.Name, err)
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	cmd := exec.Command(p.spec.Binary, p.spec.Args...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.spec.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited, p.killing = cmd, exited, false
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		crashed := !p.killing && !p.stopped
		if crashed {
			p.crashes = append(p.crashes, fmt.Sprintf("%s exited on its own at %s: %v (log: %s)", p.spec.Name,
				time.Now().Format(time.TimeOnly), err, p.spec.LogPath))
		}
		p.cmd = nil
		p.mu.Unlock()
		close(exited)
		if crashed {
			time.AfterFunc(time.Second, func() { _ = p.start() })
		}
	}()
	return nil
}

// Kill ends the part with SIGKILL and waits until it is gone.
func (p *Process) Kill() error { return p.signal(syscall.SIGKILL, 0) }

// Stop asks the part to stop (SIGTERM), kills it if it has not after grace, and keeps it down.
func (p *Process) Stop(grace time.Duration) error {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	return p.signal(syscall.SIGTERM, grace)
}

func (p *Process) signal(sig syscall.Signal, grace time.Duration) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.killing = true
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("%s: %s: %w", p.spec.Name, sig, err)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-exited:
			return nil
		case <-time.After(grace):
			_ = cmd.Process.Kill()
		}
	}
	<-exited
	return nil
}

// Crashes are the exits of the part that chaos did not cause.
func (p *Process) Crashes() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.crashes...)
}

// Target is the part as a fault target.
func (p *Process) Target() Target {
	return Target{Name: p.spec.Name, Kind: p.spec.Kind, Kill: p.Kill, Restart: p.start}
}
