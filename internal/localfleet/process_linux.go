package localfleet

import "syscall"

// setParentDeathSignal makes the kernel kill the child when its parent dies, so a crashed or killed test
// binary cannot leak apiservers.
func setParentDeathSignal(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
