package netlab_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/fleetflow/fleetflow/internal/netlab"
)

// TestCutAndHeal dials the root namespace from a host through the bridge: it connects, fails while the host is
// cut off, and connects again once healed.
func TestCutAndHeal(t *testing.T) {
	lab := netlab.ForTest(t)
	h, err := lab.AddHost()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", lab.Gateway()+":0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	dial := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		c, err := h.DialContext(ctx, "tcp", l.Addr().String())
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	if err := dial(10 * time.Second); err != nil {
		t.Fatalf("dial the root namespace from %s: %v", h.Name, err)
	}
	if err := h.Cut(); err != nil {
		t.Fatal(err)
	}
	if err := dial(time.Second); err == nil {
		t.Fatalf("dialed the root namespace from %s while it was cut off", h.Name)
	}
	if err := h.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := dial(10 * time.Second); err != nil {
		t.Fatalf("dial the root namespace from %s once healed: %v", h.Name, err)
	}
}
