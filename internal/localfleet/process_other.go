//go:build !linux

package localfleet

import "syscall"

// setParentDeathSignal has no portable equivalent outside Linux; Stop and fleet down remain the only cleanup.
func setParentDeathSignal(*syscall.SysProcAttr) {}
