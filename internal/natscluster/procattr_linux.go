package natscluster

import "syscall"

// procAttr has the kernel kill a node when the process that started it dies, even by SIGKILL, when no
// cleanup runs; the node's stdin reaching EOF covers the same on other systems.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
