//go:build !linux

package natscluster

import "syscall"

// procAttr is empty where Pdeathsig does not exist: a node stops when its stdin reaches EOF.
func procAttr() *syscall.SysProcAttr { return nil }
