//go:build !linux

package chaos

import "syscall"

// procAttr sets nothing: only Linux kills a child with its parent.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
