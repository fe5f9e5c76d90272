package netlab

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// dialIn dials from a thread moved into the namespace at nsPath: a socket belongs to the namespace it was made
// in, and keeps it once the thread moves back.
func dialIn(ctx context.Context, nsPath, network, address string) (net.Conn, error) {
	type result struct {
		conn net.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// Locked and, unless moved back, never unlocked: the runtime then ends the thread with the goroutine
		// rather than let other goroutines run in the wrong namespace.
		runtime.LockOSThread()
		conn, restored, err := dialOnThread(ctx, nsPath, network, address)
		if restored {
			runtime.UnlockOSThread()
		}
		done <- result{conn, err}
	}()
	r := <-done
	return r.conn, r.err
}

func dialOnThread(ctx context.Context, nsPath, network, address string) (net.Conn, bool, error) {
	home, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, true, fmt.Errorf("netlab: %w", err)
	}
	defer func() { _ = home.Close() }()
	target, err := os.Open(nsPath)
	if err != nil {
		return nil, true, fmt.Errorf("netlab: %w", err)
	}
	defer func() { _ = target.Close() }()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return nil, true, fmt.Errorf("netlab: enter %s: %w", nsPath, err)
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, address)
	restored := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil
	if dialErr != nil {
		return nil, restored, fmt.Errorf("netlab: dial %s in %s: %w", address, nsPath, dialErr)
	}
	return conn, restored, nil
}
