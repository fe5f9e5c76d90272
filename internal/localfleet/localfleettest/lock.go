package localfleettest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// LockFile is the machine-wide lock that serializes test fleets, in the temporary directory.
const LockFile = "fleetflow-localfleet.lock"

// Lock takes the machine-wide test fleet lock, waiting for it if another test binary holds it (waiting is
// called once before blocking). Test packages run in parallel, and each fleet holds several hundred
// megabytes, so a test that starts its own fleet instead of using Run should hold this lock while it runs.
// The lock is released by the returned function (safe to call more than once) or when the process exits.
func Lock(waiting func(path string)) (unlock func(), err error) {
	return lockAt(filepath.Join(os.TempDir(), LockFile), waiting)
}

func lockAt(path string, waiting func(path string)) (unlock func(), err error) {
	file, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, fmt.Errorf("localfleettest: lock: %w", err)
	}
	err = syscall.Flock(int(file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		if waiting != nil {
			waiting(path)
		}
		err = syscall.Flock(int(file.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		_ = file.Close()
		return nil, fmt.Errorf("localfleettest: lock %s: %w", path, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = syscall.Flock(int(file.Fd()), syscall.LOCK_UN)
			_ = file.Close()
		})
	}, nil
}
