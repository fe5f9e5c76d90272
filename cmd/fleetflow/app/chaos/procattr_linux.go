package chaos

import "syscall"

// procAttr has the kernel kill a part when chaos dies, even by SIGKILL, so no run leaks processes.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
